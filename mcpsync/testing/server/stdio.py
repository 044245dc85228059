"""Serving one :class:`~mcpsync.testing.server.connection.ServerConnection` on newline-delimited
JSON over this process's stdin/stdout."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from mcpsync.exceptions import ConnectionClosed
from mcpsync.testing.server.connection import Send, ServerConnection
from mcpsync.testing.server.errors import PARSE_ERROR, RpcError
from mcpsync.transports.base import encode_message


_log = logging.getLogger(__name__)


def serve_stdio(connect: Callable[[Send], ServerConnection], stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve one client on *stdin*/*stdout* until EOF; the calling thread is the reader thread.

    :param connect: makes the connection, given the function that writes a message.
    :param stdin: binary stream the client writes to.
    :param stdout: binary stream the client reads; nothing else may write to it.

    When this returns, no thread is writing to *stdout* and none ever will
    again: a tool thread still running gets :class:`ConnectionClosed` from
    its next write.  That is what lets the process exit cleanly right after
    (a daemon thread inside ``stdout.flush()`` while the interpreter
    finalises aborts it with ``Fatal Python error: _enter_buffered_busy``).
    """
    write_lock = threading.Lock()
    closed = False

    def send(message: Mapping[str, Any]) -> None:
        data = encode_message(message) + b"\n"  # raises before anything is written
        with write_lock:
            if closed:
                raise ConnectionClosed("the session is over")
            try:
                stdout.write(data)
                stdout.flush()
            except (OSError, ValueError) as exc:  # broken pipe, or stdout closed
                raise ConnectionClosed("stdout is closed") from exc

    conn = connect(send)
    try:
        for line in stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line.decode("utf-8"))
            except (ValueError, RecursionError):  # bad UTF-8 or JSON, or absurdly deep nesting
                conn.respond(None, RpcError(PARSE_ERROR, "Parse error"))
                continue
            try:
                conn.feed(message)
            except Exception:  # a bug here must not end the session for every later request
                _log.exception("failed to handle a message")
    finally:
        try:
            conn.connection_lost(ConnectionClosed("stdin closed"), drain=True)
        finally:
            with write_lock:  # waits for a write in progress to finish
                closed = True
