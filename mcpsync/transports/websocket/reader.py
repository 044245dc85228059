"""The reader loop of the WebSocket transport: frames in, messages and close codes out.

:class:`FrameReader` runs on the transport's one reader thread.  It owns what
only reading needs (the frame reassembly state, the count of skipped frames)
and is handed, as values and callables, what it shares with the transport: the
socket, the closing flag, ``on_message``, and the transport's ``fail``,
``send_close``, ``pong`` and ``teardown`` steps.  It reports every way the
connection can end through ``fail``, exactly once, and never refers back to
the transport object.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from mcpsync.exceptions import ConnectionClosed, MessageTooLarge, excerpt
from mcpsync.transports.base import MessageHandler
from mcpsync.transports.websocket import frames as frames
from mcpsync.transports.websocket.frames import WebSocketClosed

__all__ = ["FrameReader"]

log = logging.getLogger(__name__)

class TooLarge(Exception):
    """A message passed the cap; raised before its payload is read."""


class FrameReader:
    """Reads messages until the connection ends, then tears the socket down.

    Message reassembly and the size cap are done here: the length of every frame is
    known from its header before its payload is read, and a data frame that would take
    the message past ``max_bytes`` ends the connection at once, so a hostile server
    cannot make us buffer it.  The frame buffer of ``websocket-client`` keeps partial
    state across socket timeouts, so a read may be tried again after one.

    :param ws: the connected ``websocket-client`` socket.
    :param max_bytes: largest accepted message.
    :param describe: the transport's description, for logs and errors.
    :param closing: set once the connection is closing.
    :param on_message: gets each JSON message.
    :param fail: the transport's one way to end the connection: ``fail(exc, close_code=None,
        reason="")`` enters the closing state once and reports *exc*.
    :param answer_close: echoes the peer's close code (unless ours went out first).
    :param pong: answers a ping with its payload.
    :param teardown: closes the socket once the loop ends.
    """

    def __init__(self, ws: Any, *, max_bytes: int, describe: str, closing: threading.Event,
                 on_message: MessageHandler, fail: Callable[..., bool], answer_close: Callable[[int], None],
                 pong: Callable[[bytes], None], teardown: Callable[[], None]) -> None:
        self._ws, self._max, self._describe, self._closing = ws, max_bytes, describe, closing
        self._on_message, self._fail, self._teardown = on_message, fail, teardown
        self._answer_close, self._pong = answer_close, pong
        #: Frames skipped because they were binary or not JSON (each logged, rate-limited).
        self.skipped_frames = 0
        self._opcode: int | None = None  # of the message being reassembled
        self._parts: list[bytes] = []
        self._size = 0

    def run(self) -> None:
        """Read messages until the connection ends, then tear the socket down."""
        lib = frames.library()
        describe = self._describe
        try:
            while True:
                try:
                    item = self._next()
                except lib.WebSocketTimeoutException:
                    continue  # the frame state survives; the shutdown of close() ends us
                if item is None:
                    continue
                opcode, data = item
                if opcode == frames.CLOSE:
                    self._peer_closed(data)
                    return
                if not self._closing.is_set():
                    self._deliver(opcode, data)
        except TooLarge:
            self._fail(MessageTooLarge(f"a message from {describe} exceeded max_message_bytes={self._max}"),
                       close_code=1009, reason="message too big")
        except (lib.WebSocketProtocolException, lib.WebSocketPayloadException) as exc:
            self._fail(WebSocketClosed(f"{describe} broke the WebSocket protocol: {excerpt(str(exc))}", code=1002),
                       close_code=1002, reason="protocol error")
        except (lib.WebSocketConnectionClosedException, OSError) as exc:
            self._fail(WebSocketClosed(f"the connection to {describe} was lost without a close frame", code=1006))
            log.debug("reader of %s ended: %r", describe, exc)
        except BaseException as exc:  # the reader never dies silently
            log.exception("WebSocket reader of %s failed", describe)
            err = ConnectionClosed(f"the WebSocket reader of {describe} failed: {type(exc).__name__}")
            err.__cause__ = exc
            self._fail(err)
        finally:
            self._teardown()

    def _next(self) -> tuple[int, bytes] | None:
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
            total = self._size + buf.length
            if buf.header[4] not in (frames.CONT, frames.TEXT, frames.BINARY):
                if buf.length > 125:
                    raise frames.library().WebSocketProtocolException("control frame longer than 125 bytes")
            elif total > self._max:
                self._opcode, self._parts, self._size = None, [], 0
                raise TooLarge(total)
        frame = ws.recv_frame()
        opcode = frame.opcode
        if opcode == frames.PING:
            if not self._closing.is_set():
                self._pong(frame.data)
            return None
        if opcode == frames.PONG:
            return None
        if opcode == frames.CLOSE:
            return frames.CLOSE, bytes(frame.data)
        lib = frames.library()
        if opcode == frames.CONT:
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

    def _peer_closed(self, data: bytes) -> None:
        code, reason = frames.parse_close(data)
        # Echo the code, as RFC 6455 asks; an initiated close was answered already.
        self._answer_close(code if code not in (1005, 1006) else 1000)
        text = f"{self._describe} closed the connection (code {code}"
        text += f": {excerpt(reason, 120)})" if reason else ")"
        self._fail(WebSocketClosed(text, code=code, reason=reason))

    def _deliver(self, opcode: int, data: bytes) -> None:
        if opcode != frames.TEXT:
            self._skip("a binary frame", data)
            return
        try:
            message = json.loads(data.decode("utf-8"))
        except Exception as exc:  # noqa: BLE001 - incl. RecursionError and bad UTF-8
            self._skip(f"a frame that is not JSON ({type(exc).__name__})", data)
            return
        try:
            self._on_message(message)
        except Exception:
            log.exception("on_message callback of %s raised; message dropped", self._describe)

    def _skip(self, what: str, data: bytes) -> None:
        self.skipped_frames += 1
        if self.skipped_frames <= 5 or self.skipped_frames % 1000 == 0:
            log.warning("skipped %s from %s (%d so far): %s", what, self._describe, self.skipped_frames,
                        excerpt(data, 120))
