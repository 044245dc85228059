"""Pipe helpers for the stdio transport: stdout framing and stderr draining.

:class:`JsonLineFramer` turns stdout bytes into JSON values; :class:`StderrDrain`
keeps stderr flowing on its own thread.  Nothing here starts a thread at import.
"""

from __future__ import annotations

import json
import logging
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any, Union

from mcpsync.exceptions import excerpt

__all__ = [
    "JsonLineFramer",
    "LineTooLong",
    "StderrDrain",
    "StderrOption",
    "readable_waiter",
    "wait_readable",
    "wait_writable",
    "write_until",
]

_log = logging.getLogger("mcpsync.transports.stdio.transport")

_WINDOWS = sys.platform == "win32"
_WARN_BURST = 5  # skipped-line warnings per window; the rest are only counted
_WARN_WINDOW = 60.0

#: What ``stderr=`` accepts: ``None`` (log lines to ``mcpsync.server``), a
#: callable taking one decoded line, an OS file descriptor, or a file object.
StderrOption = Union[None, int, IO[Any], Callable[[str], None]]  # noqa: UP007 - runtime alias on 3.10


def wait_readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` became readable (data, EOF or error) within ``timeout``.

    ``poll`` rather than ``select``: a busy web process may hold more than
    FD_SETSIZE descriptors.  Windows pipes cannot be polled; there the caller
    simply blocks in ``os.read``.
    """
    return readable_waiter(fd)(timeout)


def readable_waiter(fd: int) -> Callable[[float], bool]:
    """:func:`wait_readable` for one ``fd``, set up once for a reading loop."""
    if _WINDOWS:
        return lambda timeout: True
    poll = select.poll()
    poll.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    wait = poll.poll

    def ready(timeout: float) -> bool:
        return bool(wait(int(timeout * 1000)))

    return ready


def wait_writable(fd: int, timeout: float) -> None:
    """Block until ``fd`` can take more bytes (or broke), at most ``timeout`` seconds."""
    if _WINDOWS:
        return
    poller = select.poll()
    poller.register(fd, select.POLLOUT | select.POLLERR | select.POLLHUP)
    poller.poll(int(timeout * 1000))


def write_until(fd: int, data: bytes | memoryview, deadline: float | None, stop: Callable[[], bool]) -> int:
    """Write ``data`` to non-blocking ``fd``; return how many bytes went out.

    Returns early (short) when ``deadline`` passes or ``stop()`` turns true,
    which is checked at least every 0.1 s while the pipe is full.
    """
    view, total = memoryview(data), len(data)
    while view and not stop():
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            left = 0.1 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                break
            wait_writable(fd, min(left, 0.1))
    return total - len(view)


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
        self._cap = cap
        self._deliver = deliver
        self._label = label
        self._buf = bytearray()
        #: Lines skipped because they were not JSON.
        self.skipped = 0
        #: Whether any JSON line was seen.
        self.received_any = False
        self._warn_start = 0.0
        self._warn_count = 0

    def feed(self, chunk: bytes, stop: Callable[[], bool]) -> None:
        """Process ``chunk``; stop early once ``stop()`` is true.

        :raises LineTooLong: when the current line exceeds the cap.
        """
        buf, cap, start = self._buf, self._cap, 0
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
            message = json.loads(text)
        except Exception as exc:  # noqa: BLE001 - incl. RecursionError, not a ValueError
            self._skip(text, exc)
            return
        self.received_any = True
        self._deliver(message)

    def _skip(self, text: str, exc: BaseException) -> None:
        self.skipped += 1
        now = time.monotonic()
        if now - self._warn_start > _WARN_WINDOW:
            self._warn_start, self._warn_count = now, 0
        self._warn_count += 1
        if self._warn_count <= _WARN_BURST:
            _log.warning(
                "skipped a non-JSON line from %s (%s): %s",
                self._label,
                type(exc).__name__,
                excerpt(text, 120),
            )
        elif self._warn_count == _WARN_BURST + 1:
            _log.warning(
                "skipping more non-JSON lines from %s; warnings suppressed for %d s",
                self._label,
                int(_WARN_WINDOW),
            )


class StderrDrain:
    """Drain a child's stderr on a named daemon thread; keep its head and tail.

    Reads chunks with ``os.read`` (a server that writes progress bars without
    newlines must not make us buffer forever), keeps the first ``head_lines``
    lines (at most ``head_bytes``) and the last ``tail_lines`` lines (at most
    ``tail_bytes``) for error reports, and forwards output to ``sink``.
    """

    _LINE_LIMIT = 8192

    def __init__(
        self,
        stream: IO[bytes],
        sink: StderrOption,
        *,
        label: str,
        tail_bytes: int = 6000,
        tail_lines: int = 20,
        head_bytes: int = 2000,
        head_lines: int = 10,
    ) -> None:
        self._stream = stream
        self._sink = sink
        self._label = label
        self._tail_bytes = tail_bytes
        self._tail_lines = tail_lines
        self._head_bytes = head_bytes
        self._head_lines = head_lines
        # The first lines usually say what went wrong; the last lines say how it ended
        # (a server may print its error and then 40 lines of usage).
        self._head = bytearray()
        self._head_full = False
        self._tail = bytearray()
        self._gap = 0  # lines dropped between head and tail
        self._gap_bytes = 0
        self._tail_lock = threading.Lock()
        self._partial = bytearray()
        self._stop = threading.Event()
        self._eof = threading.Event()
        self._thread: threading.Thread | None = None
        self._server_log = logging.getLogger("mcpsync.server")

    def start(self, name: str) -> None:
        """Start the drain thread, named ``name``."""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        """Whether the drain thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        """Ask the thread to finish even if a stray process keeps stderr open."""
        self._stop.set()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the thread to end."""
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def wait_eof(self, timeout: float) -> bool:
        """Wait until the child's stderr reached EOF (so the tail is complete)."""
        return self._eof.wait(timeout)

    def tail(self) -> str:
        """The first and last lines of stderr, decoded leniently (untrusted text).

        When output was left out between the two, a line ``[... N lines
        skipped ...]`` stands in for it.  At most ``head_bytes + tail_bytes``
        bytes of output are shown.
        """
        with self._tail_lock:
            head, tail, gap, dropped = bytes(self._head), bytes(self._tail), self._gap, self._gap_bytes
        if len(tail) > self._tail_bytes:
            dropped += len(tail) - self._tail_bytes
            gap += tail.count(b"\n", 0, len(tail) - self._tail_bytes)
            tail = tail[-self._tail_bytes :]
        tail_lines = tail.decode("utf-8", errors="replace").splitlines()
        if dropped and len(tail_lines) > 1:  # the first line kept was (probably) cut
            gap += 1
            tail_lines = tail_lines[1:]
        if len(tail_lines) > self._tail_lines:
            gap += len(tail_lines) - self._tail_lines
            dropped += 1
            tail_lines = tail_lines[-self._tail_lines :]
        lines = head.decode("utf-8", errors="replace").splitlines()
        if dropped:
            lines.append(f"[... {gap} line{'s' if gap != 1 else ''} skipped ...]" if gap else "[...]")
        return "\n".join(lines + tail_lines).strip()

    def _run(self) -> None:
        fd = self._stream.fileno()
        try:
            while True:
                if not wait_readable(fd, 0.1):
                    if self._stop.is_set():
                        break
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                self._keep(chunk)
                self._forward(chunk)
        except BaseException:  # noqa: BLE001 - the drain must never die silently
            _log.exception("stderr drain of %s failed", self._label)
        finally:
            self._eof.set()
            if self._partial:
                self._emit(bytes(self._partial))
                self._partial.clear()
            self._stream.close()

    def _keep(self, chunk: bytes) -> None:
        with self._tail_lock:
            if not self._head_full:
                chunk = self._fill_head(chunk)
            self._tail += chunk
            if len(self._tail) > 2 * self._tail_bytes:
                cut = len(self._tail) - self._tail_bytes
                self._gap += self._tail.count(b"\n", 0, cut)
                self._gap_bytes += cut
                del self._tail[:cut]

    def _fill_head(self, chunk: bytes) -> bytes:
        """Move the start of *chunk* into the head until it is full; return the rest."""
        room = self._head_bytes - len(self._head)
        self._head += chunk[:room]
        rest = chunk[room:]
        end, newlines = -1, 0
        while newlines < self._head_lines:
            end = self._head.find(b"\n", end + 1)
            if end < 0:
                break
            newlines += 1
        if newlines == self._head_lines:  # enough lines: the head ends after the last one
            rest = bytes(self._head[end + 1 :]) + rest
            del self._head[end + 1 :]
            self._head_full = True
        elif len(self._head) >= self._head_bytes:
            self._head_full = True
        return rest

    def _forward(self, chunk: bytes) -> None:
        sink = self._sink
        if sink is None or callable(sink):
            if sink is None and not self._server_log.isEnabledFor(logging.INFO):
                return  # nobody listens: skip the line splitting entirely
            self._split(chunk)
        elif isinstance(sink, int):
            if sink >= 0:
                self._write_fd(sink, chunk)
        else:
            self._write_file(sink, chunk)

    def _split(self, chunk: bytes) -> None:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                break
            if self._partial:
                self._partial += chunk[start:nl]
                self._emit(bytes(self._partial))
                self._partial.clear()
            else:
                self._emit(chunk[start:nl])
            start = nl + 1
        self._partial += chunk[start:]
        # A newline-free flood is forwarded in pieces to keep memory bounded.
        while len(self._partial) >= self._LINE_LIMIT:
            self._emit(bytes(self._partial[: self._LINE_LIMIT]))
            del self._partial[: self._LINE_LIMIT]

    def _emit(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        sink = self._sink
        if callable(sink):
            try:
                sink(line)
            except Exception:  # noqa: BLE001 - user code must not stop the drain
                _log.exception("stderr callback for %s raised", self._label)
        elif sink is None:
            self._server_log.info("[%s] %s", self._label, line)

    def _write_fd(self, fd: int, chunk: bytes) -> None:
        try:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            _log.warning("cannot forward stderr of %s; dropping it from now on", self._label)
            self._sink = -1

    def _write_file(self, sink: IO[Any], chunk: bytes) -> None:
        try:
            raw = getattr(sink, "buffer", None)
            if raw is not None:
                raw.write(chunk)
                raw.flush()
            else:
                try:
                    sink.write(chunk)
                except TypeError:
                    sink.write(chunk.decode("utf-8", errors="replace"))
                sink.flush()
        except (OSError, ValueError):
            _log.warning("cannot forward stderr of %s; dropping it from now on", self._label)
            self._sink = -1
