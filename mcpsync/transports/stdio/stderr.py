"""Draining a stdio server's stderr: one shared thread for the whole process.

A server that writes to a full stderr pipe blocks, so stderr must always be
read.  One thread per connection did that, doubling the threads of an idle
connection; here every connection whose stderr goes to the ``mcpsync.server``
logger (the default) is drained by one process-wide thread,
``mcpsync-stderr``, polling all their pipes:

* it starts with the first such connection and ends with the last one, so an
  idle process holds no thread for it;
* it reads at most one chunk per pipe per round, so a server flooding its
  stderr never starves the others, and memory stays bounded (the head and
  tail kept per connection, see :class:`StderrDrain`);
* a forked child never uses its parent's: the first drain in the child starts
  the child's own.

A ``stderr=`` callable, file descriptor or file object runs user code or may
block, so such a connection keeps a drain thread of its own
(``mcpsync-stdio-stderr-N``), as do all connections on Windows (pipes there
cannot be polled).  Nothing here starts a thread at import.
"""

from __future__ import annotations

import logging
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any, Union

from mcpsync import _fork
from mcpsync.transports.run_state import join_thread
from mcpsync.transports.stdio.pipes import new_poller, readable_waiter

__all__ = ["StderrDrain", "StderrOption"]

_log = logging.getLogger(__name__)

_WINDOWS = sys.platform == "win32"
_CHUNK = 65536
_EVENTS = select.POLLIN | select.POLLHUP | select.POLLERR if not _WINDOWS else 0

#: What ``stderr=`` accepts: ``None`` (log lines to ``mcpsync.server``), a
#: callable taking one decoded line, an OS file descriptor, or a file object.
StderrOption = Union[None, int, IO[Any], Callable[[str], None]]  # noqa: UP007 - runtime alias on 3.10


class StderrDrain:
    """Drain a child's stderr; keep its head and tail.

    Reads chunks with ``os.read`` (a server that writes progress bars without
    newlines must not make us buffer forever), keeps the first ``head_lines``
    lines (at most ``head_bytes``) and the last ``tail_lines`` lines (at most
    ``tail_bytes``) for error reports, and forwards output to ``sink``.  The
    default sink is drained by the shared ``mcpsync-stderr`` thread; any
    other by a thread of its own.
    """

    _LINE_LIMIT = 8192

    def __init__(self, stream: IO[bytes], sink: StderrOption, *, label: str, tail_bytes: int = 6000,
                 tail_lines: int = 20, head_bytes: int = 2000, head_lines: int = 10) -> None:
        self._stream, self._fd, self._sink, self._label = stream, stream.fileno(), sink, label
        self._tail_bytes, self._tail_lines = tail_bytes, tail_lines
        self._head_bytes, self._head_lines = head_bytes, head_lines
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
        self._finished = threading.Event()  # the pipe reached EOF (or the drain stopped), is closed
        self._started = False
        self._thread: threading.Thread | None = None
        #: The shared thread, when this was its last drain: it ends right after finishing us.
        self._last_of: threading.Thread | None = None
        self._server_log = logging.getLogger("mcpsync.server")

    def start(self, name: str) -> None:
        """Start draining: on the shared thread, or on a thread of its own named ``name``."""
        self._started = True
        if self._sink is None and not _WINDOWS:
            _shared_drain.add(self)
            return
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        """Whether the stream is still being drained (and will be closed by the drain)."""
        return self._started and not self._finished.is_set()

    def stop(self) -> None:
        """Ask the drain to finish even if a stray process keeps stderr open."""
        self._stop.set()
        if self._thread is None and self._started:
            _shared_drain.wake()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the drain to finish.

        When it was the shared thread's last drain, that thread has ended too on
        return: a closed connection leaves no thread behind, not even one winding down.
        """
        end = time.monotonic() + timeout
        if self._thread is None and self._started:
            self._finished.wait(timeout)
        join_thread(self._thread or self._last_of, end - time.monotonic())

    def wait_eof(self, timeout: float) -> bool:
        """Wait until the child's stderr reached EOF (so the tail is complete)."""
        return self._finished.wait(timeout)

    def tail(self) -> str:
        """The first and last lines of stderr, decoded leniently (untrusted text).

        When output was left out between the two, a line ``[... N lines
        skipped ...]`` stands in for it.  At most ``head_bytes + tail_bytes``
        bytes of output are shown.
        """
        with self._tail_lock:
            head, tail, gap, dropped = bytes(self._head), bytes(self._tail), self._gap, self._gap_bytes
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
        """The drain's own thread (a ``stderr=`` sink, or Windows)."""
        try:
            ready = readable_waiter(self._fd)
            while True:
                if ready(0.1):
                    if not self._read_once():  # EOF
                        break
                elif self._stop.is_set():
                    break
        except BaseException:  # noqa: BLE001 - the drain must never die silently
            _log.exception("stderr drain of %s failed", self._label)
        finally:
            self._finish()

    def _read_once(self) -> bool:
        """Read and handle one chunk; ``False`` at EOF."""
        chunk = os.read(self._fd, _CHUNK)
        if not chunk:
            return False
        self._keep(chunk)
        self._forward(chunk)
        return True

    def _finish(self) -> None:
        try:
            if self._partial:
                self._emit(bytes(self._partial))
                self._partial.clear()
        finally:
            self._stream.close()
            self._finished.set()

    def _keep(self, chunk: bytes) -> None:
        with self._tail_lock:
            if not self._head_full:
                chunk = self._fill_head(chunk)
            self._tail += chunk
            if len(self._tail) > self._tail_bytes:
                cut = len(self._tail) - self._tail_bytes
                self._gap += self._tail.count(b"\n", 0, cut)
                self._gap_bytes += cut
                del self._tail[:cut]

    def _fill_head(self, chunk: bytes) -> bytes:
        """Move the start of *chunk* into the head until it is full; return the rest."""
        room = self._head_bytes - len(self._head)
        self._head += chunk[:room]
        rest = chunk[room:]
        parts = self._head.split(b"\n", self._head_lines)
        enough = len(parts) > self._head_lines
        if enough:  # enough lines: the head ends after the last one
            end = len(self._head) - len(parts[-1])
            rest = bytes(self._head[end:]) + rest
            del self._head[end:]
        self._head_full = enough or len(self._head) >= self._head_bytes
        return rest

    def _forward(self, chunk: bytes) -> None:
        sink = self._sink
        if sink is None or callable(sink):
            if sink is None and not self._server_log.isEnabledFor(logging.INFO):
                return  # nobody listens: skip the line splitting entirely
            self._split(chunk)
            return
        try:
            if isinstance(sink, int):  # an fd; a negative one: dropped
                view = memoryview(chunk)
                while view and sink >= 0:
                    view = view[os.write(sink, view) :]
                return
            raw = getattr(sink, "buffer", sink)  # a text file's binary buffer, if it has one
            try:
                raw.write(chunk)
            except TypeError:  # a text stream without one
                raw.write(chunk.decode("utf-8", errors="replace"))
            raw.flush()
        except (OSError, ValueError):
            _log.warning("cannot forward stderr of %s; dropping it from now on", self._label)
            self._sink = -1

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


class _SharedDrain:
    """The process-wide ``mcpsync-stderr`` thread: polls every registered drain's pipe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._adding: list[StderrDrain] = []
        self._drains: dict[int, StderrDrain] = {}  # the thread's own, by fd
        self._thread: threading.Thread | None = None
        self._wake_r = self._wake_w = -1

    def add(self, drain: StderrDrain) -> None:
        with self._lock:
            self._adding.append(drain)
            if self._thread is None:
                self._wake_r, self._wake_w = os.pipe()
                os.set_blocking(self._wake_w, False)
                thread = threading.Thread(target=self._run, name="mcpsync-stderr", daemon=True)
                try:
                    thread.start()
                except BaseException:
                    self._adding.remove(drain)
                    self._close_wake()
                    raise
                self._thread = thread
                return
        self.wake()

    def wake(self) -> None:
        """Make the thread look at new drains and stop requests now."""
        with self._lock:
            if self._thread is None:
                return
            try:
                os.write(self._wake_w, b"x")
            except OSError:  # full (it is awake anyway) or closing
                pass

    def _close_wake(self) -> None:
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1

    def _run(self) -> None:
        poller = new_poller()
        poller.register(self._wake_r, select.POLLIN)
        drains = self._drains
        finished: list[StderrDrain] = []
        try:
            while True:
                with self._lock:
                    for drain in self._adding:
                        drains[drain._fd] = drain
                        poller.register(drain._fd, _EVENTS)
                    self._adding.clear()
                    last = not drains
                    if last:
                        self._thread = None  # the next add starts a new thread
                        self._close_wake()
                self._finish(finished, last)
                if last:
                    return
                # Stopped drains finish after one idle look, as a thread of their own would.
                stopping = [drain for drain in drains.values() if drain._stop.is_set()]
                ready = poller.poll(100 if not stopping else 0)
                done: set[int] = set()
                for fd, _ in ready:
                    if fd == self._wake_r:
                        os.read(fd, 4096)
                        continue
                    found = drains[fd]  # polled: registered, so not yet removed
                    done.add(fd)
                    try:
                        more = found._read_once()
                    except Exception:  # noqa: BLE001 - one broken drain must not stop the others
                        _log.exception("stderr drain of %s failed", found._label)
                        more = False
                    if not more:
                        self._remove(poller, found, finished)
                for drain in stopping:
                    if drain._fd not in done and drains.get(drain._fd) is drain:
                        self._remove(poller, drain, finished)
        except BaseException:  # noqa: BLE001 - never die silently, never leave a drain unfinished
            _log.exception("the shared stderr drain failed")
            with self._lock:
                finished += list(drains.values()) + self._adding
                drains.clear()
                self._adding.clear()
                self._thread = None
                self._close_wake()
            self._finish(finished, True)

    def _remove(self, poller: select.poll, drain: StderrDrain, finished: list[StderrDrain]) -> None:
        poller.unregister(drain._fd)
        del self._drains[drain._fd]
        finished.append(drain)

    @staticmethod
    def _finish(finished: list[StderrDrain], last: bool) -> None:
        """Finish drains removed this round; on the last round, their join waits for this thread."""
        for drain in finished:
            if last:
                drain._last_of = threading.current_thread()
            drain._finish()
        finished.clear()


#: This process's shared drain (its thread starts with its first drain, not here).
_shared_drain = _SharedDrain()


def _after_fork_in_child() -> None:
    # The parent's thread does not exist here, and its lock may have been held at the fork.
    global _shared_drain
    _shared_drain = _SharedDrain()


_fork.on_fork(_after_fork_in_child)
