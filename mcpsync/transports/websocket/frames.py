"""Frame-level helpers of the WebSocket transport, over ``websocket-client``.

Kept apart from :mod:`mcpsync.transports.websocket.transport` so that module stays about
the connection's lifecycle.  Nothing here imports ``websocket`` at import
time: :func:`library` does, on first use.
"""

from __future__ import annotations

import ssl
import struct
import urllib.parse
from collections.abc import Callable
from types import ModuleType
from typing import Any

from mcpsync.exceptions import ConnectionClosed, HTTPAuthError, HTTPStatusError, excerpt
from mcpsync.transports.redact import redact_text
from mcpsync.transports.retry_after import parse_retry_after

__all__ = ["BINARY", "CLOSE", "PING", "PONG", "TEXT", "MessageReader", "TooLarge", "WebSocketClosed", "auth_headers",
           "check_headers", "encode_frame", "library", "new_socket", "parse_close", "selected_subprotocol",
           "ssl_options", "status_error"]

CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_DATA = (CONT, TEXT, BINARY)


class WebSocketClosed(ConnectionClosed):
    """The WebSocket connection ended; the close code and reason say how.

    :ivar code: the close code the server sent (e.g. ``1011`` for an internal
        error), ``1006`` when the connection dropped without a close frame,
        ``1005`` when the close frame carried no code.
    :ivar reason: the server's close reason (untrusted text, truncated in ``str()``).
    """

    def __init__(self, message: str, *, code: int = 1006, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


class TooLarge(Exception):
    """A message passed the cap; raised before its payload is read."""


def library() -> ModuleType:
    """Import ``websocket-client`` (the ``websocket`` module), with an install hint."""
    try:
        import websocket
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the WebSocket transport needs websocket-client: pip install 'mcpsync[websocket]'") from exc
    return websocket


def new_socket(lib: ModuleType, sslopt: dict[str, Any]) -> Any:
    """An unconnected ``websocket.WebSocket`` configured for one reader and locked writers."""
    # Locking is ours (whole frames under one lock); UTF-8 is checked when a
    # message is decoded, once, instead of frame by frame in pure Python.
    return lib.WebSocket(sslopt=sslopt, enable_multithread=False, skip_utf8_validation=True)


def encode_frame(opcode: int, payload: bytes) -> bytes:
    """One masked client frame, ready for the socket."""
    frame = library().ABNF.create_frame(payload, opcode)
    data: bytes = frame.format()
    return data


def parse_close(data: bytes) -> tuple[int, str]:
    """``(code, reason)`` of a close frame's payload; 1005 when it has no code."""
    if len(data) < 2:
        return 1005, ""
    (code,) = struct.unpack("!H", data[:2])
    return int(code), data[2:].decode("utf-8", errors="replace")


def selected_subprotocol(ws: Any) -> str | None:
    """The ``Sec-WebSocket-Protocol`` the server answered with, if any."""
    headers = ws.getheaders() or {}
    value = headers.get("sec-websocket-protocol")
    return value.strip() if isinstance(value, str) and value.strip() else None


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


class MessageReader:
    """Turn frames into whole messages, enforcing the size cap up front.

    The length of every frame is known from its header before its payload is
    read; a data frame that would take the message past ``cap`` raises
    :class:`TooLarge` at once, so a hostile server cannot make us buffer it.
    The frame buffer of ``websocket-client`` keeps partial state across socket
    timeouts, so :meth:`next` may be called again after one.
    """

    def __init__(self, ws: Any, cap: int) -> None:
        self._ws = ws
        self._cap = cap
        self._opcode: int | None = None
        self._parts: list[bytes] = []
        self._size = 0

    def next(self, pong: Callable[[bytes], None]) -> tuple[int, bytes] | None:
        """Read one frame; return ``(opcode, data)`` of a whole message or close frame, else ``None``.

        :raises TooLarge: when a message would exceed the cap.
        :raises websocket.WebSocketProtocolException: for frames breaking RFC 6455.
        """
        ws = self._ws
        buf = ws.frame_buffer
        if buf.needs_header():
            buf.recv_header()
        if buf.needs_length():
            buf.recv_length()
            self._check(buf.header[4], buf.length)
        frame = ws.recv_frame()
        opcode = frame.opcode
        if opcode == PING:
            pong(frame.data)
            return None
        if opcode == PONG:
            return None
        if opcode == CLOSE:
            return CLOSE, bytes(frame.data)
        lib = library()
        if opcode == CONT:
            if self._opcode is None:
                raise lib.WebSocketProtocolException("continuation frame outside a message")
        elif self._opcode is not None:
            raise lib.WebSocketProtocolException("new message inside a fragmented one")
        else:
            self._opcode = opcode
        self._parts.append(frame.data)
        self._size += len(frame.data)
        if not frame.fin:
            return None
        whole = (self._opcode, b"".join(self._parts))
        self._opcode, self._parts, self._size = None, [], 0
        return whole

    def _check(self, opcode: int, length: int) -> None:
        if opcode in _DATA:
            if self._size + length > self._cap:
                total = self._size + length
                self._opcode, self._parts, self._size = None, [], 0
                raise TooLarge(total)
        elif length > 125:
            raise library().WebSocketProtocolException("control frame longer than 125 bytes")


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
