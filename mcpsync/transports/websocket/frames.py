"""Frame-level helpers of the WebSocket transport, over ``websocket-client``.

Kept apart from :mod:`mcpsync.transports.websocket.transport` so that module stays about
the connection's lifecycle.  Nothing here imports ``websocket`` at import
time: :func:`library` does, on first use.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from types import ModuleType
from typing import Any

from mcpsync.exceptions import ConnectionClosed

__all__ = ["BINARY", "CLOSE", "CONT", "PING", "PONG", "TEXT", "WebSocketClosed", "encode_frame", "library",
           "parse_close", "shut_down"]

CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


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


def library() -> ModuleType:
    """Import ``websocket-client`` (the ``websocket`` module), with an install hint."""
    try:
        import websocket
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the WebSocket transport needs websocket-client: pip install 'mcpsync[websocket]'") from exc
    return websocket


def encode_frame(opcode: int, payload: bytes) -> bytes:
    """One masked client frame, ready for the socket."""
    frame = library().ABNF.create_frame(payload, opcode)
    data: bytes = frame.format()
    return data


def shut_down(ws: Any) -> None:
    """Shut the socket of *ws* down both ways, waking a thread blocked on it (none yet, or closed: nothing)."""
    with contextlib.suppress(AttributeError, OSError):
        ws.sock.shutdown(socket.SHUT_RDWR)


def parse_close(data: bytes) -> tuple[int, str]:
    """``(code, reason)`` of a close frame's payload; 1005 when it has no code."""
    if len(data) < 2:
        return 1005, ""
    (code,) = struct.unpack("!H", data[:2])
    return int(code), data[2:].decode("utf-8", errors="replace")
