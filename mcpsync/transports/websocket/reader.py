"""The reader loop of the WebSocket transport: frames in, messages and close codes out.

Kept apart from :mod:`mcpsync.transports.websocket.transport`, which owns the
connection's state and its lifecycle; the loop runs on the transport's one
reader thread and reports every way the connection can end through the
transport's ``_fail``, exactly once.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING

from mcpsync.exceptions import ConnectionClosed, MessageTooLarge, excerpt
from mcpsync.transports.websocket import frames as frames

if TYPE_CHECKING:
    from mcpsync.transports.websocket.transport import WebSocketTransport

__all__ = ["read_loop"]

log = logging.getLogger("mcpsync.transports.websocket.transport")


def read_loop(t: WebSocketTransport) -> None:
    """Read messages until the connection ends, then tear the socket down."""
    from mcpsync.transports.websocket.transport import WebSocketClosed

    lib = frames.library()
    reader = frames.MessageReader(t._ws, t._max)
    try:
        while True:
            try:
                item = reader.next(lambda payload: _pong(t, payload))
            except lib.WebSocketTimeoutException:
                continue  # the frame state survives; the shutdown of close() ends us
            if item is None:
                continue
            opcode, data = item
            if opcode == frames.CLOSE:
                _peer_closed(t, data)
                return
            if not t._closing.is_set():
                _deliver(t, opcode, data)
    except frames.TooLarge:
        t._fail(
            MessageTooLarge(f"a message from {t._describe} exceeded max_message_bytes={t._max}"),
            close_code=1009,
            reason="message too big",
        )
    except (lib.WebSocketProtocolException, lib.WebSocketPayloadException) as exc:
        t._fail(
            WebSocketClosed(
                f"{t._describe} broke the WebSocket protocol: {excerpt(str(exc))}", code=1002
            ),
            close_code=1002,
            reason="protocol error",
        )
    except (lib.WebSocketConnectionClosedException, OSError) as exc:
        t._fail(
            WebSocketClosed(
                f"the connection to {t._describe} was lost without a close frame", code=1006
            )
        )
        log.debug("reader of %s ended: %r", t._describe, exc)
    except BaseException as exc:  # the reader never dies silently
        log.exception("WebSocket reader of %s failed", t._describe)
        err = ConnectionClosed(f"the WebSocket reader of {t._describe} failed: {type(exc).__name__}")
        err.__cause__ = exc
        t._fail(err)
    finally:
        t._teardown()


def _peer_closed(t: WebSocketTransport, data: bytes) -> None:
    from mcpsync.transports.websocket.transport import WebSocketClosed

    code, reason = frames.parse_close(data)
    if not t._close_sent:
        # Echo the code, as RFC 6455 asks; an initiated close was answered already.
        t._send_close(code if code not in (1005, 1006) else 1000, "", timeout=1.0)
    text = f"{t._describe} closed the connection (code {code}"
    text += f": {excerpt(reason, 120)})" if reason else ")"
    t._fail(WebSocketClosed(text, code=code, reason=reason))


def _pong(t: WebSocketTransport, payload: bytes) -> None:
    if not t._closing.is_set():
        t._write(frames.PONG, payload, time.monotonic() + (t._write_timeout or 60.0))


def _deliver(t: WebSocketTransport, opcode: int, data: bytes) -> None:
    if opcode != frames.TEXT:
        _skip(t, "a binary frame", data)
        return
    try:
        message = json.loads(data.decode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - incl. RecursionError and bad UTF-8
        _skip(t, f"a frame that is not JSON ({type(exc).__name__})", data)
        return
    if t._on_message is None:
        return
    try:
        t._on_message(message)
    except Exception:
        log.exception("on_message callback of %s raised; message dropped", t._describe)


def _skip(t: WebSocketTransport, what: str, data: bytes) -> None:
    t.skipped_frames += 1
    if t.skipped_frames <= 5 or t.skipped_frames % 1000 == 0:
        log.warning(
            "skipped %s from %s (%d so far): %s",
            what,
            t._describe,
            t.skipped_frames,
            excerpt(data, 120),
        )
