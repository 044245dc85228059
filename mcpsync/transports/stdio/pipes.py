"""Pipe helpers for the stdio transport: stdout framing, pipe waits.

:class:`JsonLineFramer` turns stdout bytes into JSON values (stderr is drained by
:mod:`mcpsync.transports.stdio.stderr`).  Nothing here starts a thread at import.
"""

from __future__ import annotations

import contextlib
import json
import json.scanner
import logging
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any, cast

from mcpsync.exceptions import excerpt

__all__ = ["JsonLineFramer", "LineTooLong", "close_holding", "new_poller", "readable_waiter", "write_until"]

_log = logging.getLogger(__name__)

_WINDOWS = sys.platform == "win32"
#: One JSON value at an index; the C scanner when there is one.  It keeps no state
#: between calls (its key cache is cleared after each), and one thread reads at a time.
_scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(cast(Any, json.JSONDecoder()))


class _SelectPoll:
    """:class:`select.poll`'s interface over ``select.select``.

    ``eventlet.monkey_patch()`` deletes ``select.poll`` (its green ``select``
    module has only ``select()``); there this is the fallback, limited to
    FD_SETSIZE descriptors like everything else under eventlet.
    """

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}

    def register(self, fd: int, mask: int) -> None:
        self._fds[fd] = mask

    def unregister(self, fd: int) -> None:
        del self._fds[fd]

    def poll(self, timeout_ms: int) -> list[tuple[int, int]]:
        read, write = ([fd for fd, ev in self._fds.items() if ev & bit] for bit in (select.POLLIN, select.POLLOUT))
        readable, writable, _ = select.select(read, write, [], timeout_ms / 1000)
        return [(fd, select.POLLIN) for fd in readable] + [(fd, select.POLLOUT) for fd in writable]


def new_poller() -> select.poll:
    """A new ``select.poll()``, or :class:`_SelectPoll` where the module has none.

    ``poll`` rather than ``select``: a busy web process may hold more than
    FD_SETSIZE descriptors.  Looked up at each call: monkey-patching (gevent's
    green ``poll``, eventlet's removal of it) may happen after this import.
    """
    return select.poll() if hasattr(select, "poll") else cast("select.poll", _SelectPoll())


def readable_waiter(fd: int, *, writable: bool = False) -> Callable[[float], bool]:
    """``ready(timeout)``: whether ``fd`` became readable (data, EOF or error) within
    ``timeout`` seconds (*writable*: can take more bytes); set up once for a loop.

    Windows pipes cannot be polled; there the caller simply blocks in ``os.read``.
    """
    if _WINDOWS:
        return lambda timeout: True
    poll = new_poller()
    poll.register(fd, (select.POLLOUT if writable else select.POLLIN) | select.POLLHUP | select.POLLERR)
    wait = poll.poll

    def ready(timeout: float) -> bool:
        return bool(wait(int(timeout * 1000)))

    return ready


def write_until(fd: int, data: bytes | memoryview, deadline: float | None, stop: Callable[[], bool]) -> int:
    """Write ``data`` to non-blocking ``fd``; return how many bytes went out.

    Returns early (short) when ``deadline`` passes or ``stop()`` turns true,
    which is checked at least every 0.1 s while the pipe is full.
    """
    view, total = memoryview(data), len(data)
    writable = readable_waiter(fd, writable=True)
    while view and not stop():
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            left = 0.1 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                break
            writable(min(left, 0.1))
    return total - len(view)


def close_holding(lock: threading.Lock, stream: IO[bytes], timeout: float) -> bool:
    """Close *stream* holding *lock*, the lock every use of its fd holds, by *timeout*.

    Closed under a thread still using the fd, the fd number could be reused at once
    and that thread would read or write an unrelated file.  ``False``: not closed.
    """
    if not lock.acquire(timeout=timeout):
        return False
    try:
        with contextlib.suppress(OSError):
            stream.close()
    finally:
        lock.release()
    return True


class LineTooLong(Exception):
    """A line passed the framer's cap; the caller decides what that means."""


class JsonLineFramer:
    """Split a byte stream on ``\\n`` and hand each JSON line to ``deliver``.

    Linear time: only the new chunk is searched for newlines and the partial
    line grows in place.  The cap is checked *before* bytes are copied, so
    memory stays O(cap).  One trailing ``\\r`` is stripped, blank lines are
    ignored, text is decoded with ``errors="replace"``, and a line that is not
    JSON (``RecursionError`` on ``[[[[…`` included) is skipped with a
    rate-limited WARNING and counted in :attr:`skipped`.
    """

    def __init__(self, cap: int, deliver: Callable[[Any], None], *, label: str) -> None:
        self.cap = cap
        self._deliver = deliver
        self._label = label
        self._buf = bytearray()
        #: Lines skipped because they were not JSON.
        self.skipped = 0
        #: Whether any JSON line was seen.
        self.received_any = False

    def feed(self, chunk: bytes, stop: Callable[[], bool]) -> None:
        """Process ``chunk``; stop early once ``stop()`` is true.

        :raises LineTooLong: when the current line exceeds the cap.
        """
        buf, cap, start = self._buf, self.cap, 0
        last = len(chunk) - 1
        if not buf and last < cap and chunk.find(b"\n") == last:
            self._line(memoryview(chunk)[:last])  # one whole line: the usual reply
            return
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                break
            if len(buf) + (nl - start) > cap:
                raise LineTooLong
            if buf:
                buf += memoryview(chunk)[start:nl]
                self._line(buf)
                buf.clear()
            else:
                self._line(chunk[start:nl])
            start = nl + 1
            if stop():
                return
        if len(buf) + (len(chunk) - start) > cap:
            raise LineTooLong
        buf += memoryview(chunk)[start:]

    def flush(self) -> None:
        """Parse an unterminated last line once (at EOF), then forget it."""
        if self._buf:
            self._line(self._buf)
        self._buf.clear()

    def reset(self) -> None:
        """Drop any partial line."""
        self._buf.clear()

    def _line(self, line: bytes | bytearray | memoryview) -> None:
        end = len(line)
        if end and line[end - 1] == 13:  # one trailing carriage return (CRLF servers)
            line = memoryview(line)[: end - 1]
        text = str(line, "utf-8", "replace")
        if not text or text.isspace():
            return
        try:
            # The C scanner straight away (json.loads adds two regex matches and
            # three calls); anything but one whole value goes the long way.
            try:
                message, end = _scan(text, 0)
            except StopIteration:  # not a value at position 0 (leading space, junk)
                end = -1
            if end != len(text):
                message = json.loads(text)
        except Exception as exc:  # noqa: BLE001 - incl. RecursionError, not a ValueError
            self._skip(text, exc)
            return
        self.received_any = True
        self._deliver(message)

    def _skip(self, text: str, exc: BaseException) -> None:
        self.skipped += 1
        if self.skipped <= 5 or self.skipped % 1000 == 0:  # rate-limited as the WebSocket reader's
            _log.warning("skipped a non-JSON line from %s (%s; %d so far): %s", self._label, type(exc).__name__,
                         self.skipped, excerpt(text, 120))
