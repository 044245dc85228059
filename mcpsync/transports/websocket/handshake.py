"""The opening handshake of the WebSocket transport: connect, upgrade, check the subprotocol.

Kept apart from :mod:`mcpsync.transports.websocket.transport` so that module stays about
the connection's lifecycle; nothing here keeps state between connects.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from mcpsync.exceptions import ServerStartError, excerpt
from mcpsync.transports.websocket import frames as frames

__all__ = ["handshake"]


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
    ws = frames.new_socket(lib, sslopt)
    on_socket(ws)
    header = {**headers, **frames.auth_headers(auth, url)}
    if subprotocols:
        header["Sec-WebSocket-Protocol"] = ", ".join(subprotocols)
    options: dict[str, Any] = {
        "header": header,
        "timeout": connect_timeout,
        "redirect_limit": 0,  # a redirect would carry the credentials elsewhere
    }
    if origin is not None:
        options["origin"] = origin
    else:
        options["suppress_origin"] = True
    # connect_timeout bounds the whole upgrade, not only each read: websocket-client reads a
    # refused upgrade's body whole, with no cap (a server streaming 64 MiB held the caller for
    # minutes, its memory growing), so the socket is cut when the time is up.
    late = threading.Event()

    def cut() -> None:
        late.set()
        try:
            ws.sock.shutdown(socket.SHUT_RDWR)
        except (AttributeError, OSError):
            pass  # not connected yet, or closed meanwhile

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
        raise frames.status_error(exc, describe) from None
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
    chosen = frames.selected_subprotocol(ws)
    if subprotocols and chosen not in subprotocols:
        ws.shutdown()
        got = f"selected {excerpt(chosen)!r}" if chosen else "selected none"
        raise ServerStartError(
            f"{describe} does not speak the {'/'.join(subprotocols)!r} "
            f"WebSocket subprotocol ({got}); pass subprotocols=() if it needs none"
        )
    return chosen
