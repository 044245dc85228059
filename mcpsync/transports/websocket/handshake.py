"""The opening handshake of the WebSocket transport: connect, upgrade, check the subprotocol;
with what it is made of (the headers an auth object sets, TLS options, a refused upgrade's error).

Kept apart from :mod:`mcpsync.transports.websocket.transport` so that module stays about
the connection's lifecycle; nothing here keeps state between connects.
"""

from __future__ import annotations

import ssl
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from mcpsync.exceptions import HTTPAuthError, HTTPStatusError, ServerStartError, excerpt
from mcpsync.transports.redact import redact_text
from mcpsync.transports.retry_after import parse_retry_after
from mcpsync.transports.websocket import frames as frames

__all__ = ["check_headers", "handshake", "ssl_options"]


def handshake(url: str, *, describe: str, headers: Mapping[str, str], auth: Any, subprotocols: Sequence[str],
              sslopt: dict[str, Any], origin: str | None, connect_timeout: float, on_socket: Any) -> str | None:
    """Connect to ``url`` and run the upgrade; return the selected subprotocol.

    ``on_socket`` receives the ``websocket.WebSocket`` before it connects, so
    that the caller can shut it down from another thread while it does.

    :raises ~mcpsync.exceptions.ServerStartError: if the server cannot be
        reached, TLS fails, or the server does not speak the subprotocol.
    :raises ~mcpsync.exceptions.HTTPStatusError: if the server answers the
        upgrade with an HTTP error.
    """
    lib = frames.library()
    # Locking is ours (whole frames under one lock); UTF-8 is checked when a
    # message is decoded, once, instead of frame by frame in pure Python.
    ws = lib.WebSocket(sslopt=sslopt, enable_multithread=False, skip_utf8_validation=True)
    on_socket(ws)
    header = {**headers, **auth_headers(auth, url)}
    if subprotocols:
        header["Sec-WebSocket-Protocol"] = ", ".join(subprotocols)
    options: dict[str, Any] = {
        "header": header,
        "timeout": connect_timeout,
        "redirect_limit": 0,  # a redirect would carry the credentials elsewhere
        "origin": origin,
        "suppress_origin": origin is None,  # no Origin unless asked for: we are not a browser
    }
    # connect_timeout bounds the whole upgrade, not only each read: websocket-client reads a
    # refused upgrade's body whole, with no cap (a server streaming 64 MiB held the caller for
    # minutes, its memory growing), so the socket is cut when the time is up.
    late = threading.Event()

    def cut() -> None:
        late.set()
        frames.shut_down(ws)

    watchdog = threading.Timer(connect_timeout, cut)
    watchdog.name, watchdog.daemon = "mcpsync-ws-connect", True
    watchdog.start()
    try:
        try:
            ws.connect(url, **options)
        finally:
            watchdog.cancel()
            watchdog.join()  # cut() is short: from here on, late is final
        if late.is_set():  # cut just as the upgrade completed
            ws.shutdown()
            raise lib.WebSocketException("cut")
    except lib.WebSocketBadStatusException as exc:
        raise status_error(exc, describe) from None
    except (lib.WebSocketException, OSError, ValueError) as exc:
        if late.is_set():
            raise ServerStartError(f"{describe} did not complete the upgrade within {connect_timeout} s") from None
        hint = ""
        if isinstance(exc, ssl.SSLCertVerificationError):
            hint = " (TLS certificate not trusted: pass verify=<CA bundle path> for a private CA)"
        elif "redirect" in str(exc).lower():
            hint = " (redirects are not followed on WebSocket handshakes; use the final URL)"
        raise ServerStartError(
            f"cannot connect to {describe}: {type(exc).__name__}: {excerpt(str(exc))}{hint}"
        ) from exc
    chosen = (ws.getheaders() or {}).get("sec-websocket-protocol")  # what the server answered with
    chosen = chosen.strip() if isinstance(chosen, str) and chosen.strip() else None
    if subprotocols and chosen not in subprotocols:
        ws.shutdown()
        got = f"selected {excerpt(chosen)!r}" if chosen else "selected none"
        raise ServerStartError(
            f"{describe} does not speak the {'/'.join(subprotocols)!r} "
            f"WebSocket subprotocol ({got}); pass subprotocols=() if it needs none"
        )
    return chosen


def auth_headers(auth: Any, url: str) -> dict[str, str]:
    """The headers a ``requests`` auth object adds to a GET of the URL's ``http(s)`` form.

    The request is only prepared, never sent: bearer and OAuth objects put
    their (possibly refreshed) token on it, which is all a WebSocket
    handshake can carry.
    """
    if auth is None:
        return {}
    import requests

    if isinstance(auth, tuple) and len(auth) == 2:
        auth = requests.auth.HTTPBasicAuth(*auth)
    if not callable(auth):
        raise TypeError("auth must be a requests auth object or a (user, password) tuple")
    parts = urllib.parse.urlsplit(url)
    http_url = urllib.parse.urlunsplit(
        ("https" if parts.scheme == "wss" else "http", parts.netloc, parts.path, parts.query, "")
    )
    request = requests.Request("GET", http_url).prepare()
    before = dict(request.headers)
    prepared = auth(request)
    return {str(name): str(value) for name, value in prepared.headers.items() if before.get(name) != value}


def check_headers(headers: dict[str, str]) -> None:
    """Refuse header names or values that would split the handshake request."""
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("header names and values must be str")
        if any(c in name + value for c in "\r\n\0") or not name or ":" in name:
            raise ValueError(f"invalid handshake header {name!r}")


def ssl_options(verify: bool | str, cert: str | tuple[str, str] | None,
                context: ssl.SSLContext | None) -> dict[str, Any]:
    """The ``sslopt`` of ``websocket-client`` for requests-style ``verify``/``cert``."""
    if context is not None:
        return {"context": context}
    opts: dict[str, Any] = {}
    if verify is False:
        opts.update(cert_reqs=ssl.CERT_NONE, check_hostname=False)
    elif isinstance(verify, str):
        opts["ca_certs"] = verify
    if isinstance(cert, str):
        opts["certfile"] = cert
    elif cert is not None:
        opts["certfile"], opts["keyfile"] = cert
    return opts


def status_error(exc: Any, where: str) -> HTTPStatusError:
    """An :class:`HTTPStatusError` for a refused upgrade (body redacted to an excerpt)."""
    status = int(getattr(exc, "status_code", 0) or 0)
    headers = getattr(exc, "resp_headers", None) or {}
    body = getattr(exc, "resp_body", None) or b""
    retry = parse_retry_after(headers.get("retry-after"))
    # A 401/403 here was resolved by nothing: no auth handler sees a WebSocket upgrade.
    cls = HTTPAuthError if status in (401, 403) else HTTPStatusError
    return cls(status, f"{where} refused the WebSocket upgrade",
               body_excerpt=redact_text(excerpt(body.strip(), 200)) if body else "", retry_after=retry)
