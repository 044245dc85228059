"""The stdio transport's reading side: the reader thread and caller reads.

:class:`StdoutReading` is a mixin of
:class:`~mcpsync.transports.stdio.transport.StdioTransport`: it reads the server's
stdout, frames it into JSON values and hands them to ``on_message``.  Two
kinds of thread read, never at once (:class:`~.caller_read.ReadBaton` decides):

* the background reader thread (``mcpsync-stdio-reader-N``), the only one
  that reports the server's death;
* a caller waiting for the only pending reply (:meth:`StdoutReading.read_for`),
  which saves the two thread switches of a hand-over.  Whatever it reads goes
  through the same framer and ``on_message``; user callbacks are only ever
  queued from there, so they run on dispatcher threads in either case.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import ConnectionClosed, MessageTooLarge
from mcpsync.transports.stdio.caller_read import ReadBaton
from mcpsync.transports.stdio.pipes import JsonLineFramer, LineTooLong, wait_readable
from mcpsync.transports.base import MessageHandler

__all__ = ["StdoutReading"]

log = logging.getLogger("mcpsync.transports.stdio.transport")

_POLL = 0.1  # how often blocked threads re-check for close / process exit
_CHUNK = 65536


class StdoutReading:
    """Reading half of the stdio transport (a mixin: the transport owns the state)."""

    # Owned and set up by StdioTransport.
    _proc: subprocess.Popen[bytes] | None
    _owner_pid: int | None
    _baton: ReadBaton | None
    _ready: Callable[[float], bool]
    _framer: JsonLineFramer
    _closing: threading.Event
    _stop_reader: threading.Event
    _next_check: float
    _quiet: Callable[[], bool] | None
    _on_message: MessageHandler | None
    _max: int

    if TYPE_CHECKING:  # provided by StdioTransport

        def describe(self) -> str: ...

        @property
        def stderr_tail(self) -> str: ...

        def _fail(self, exc: ConnectionClosed, *, inline: bool = False) -> bool: ...

        def _death_error(self, message: str, cause: BaseException | None = None) -> ConnectionClosed: ...

    def _read_loop(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        stream = proc.stdout
        try:
            self._pump(proc, stream.fileno())
        except BaseException as exc:  # the reader never dies silently
            log.exception("stdio reader of %s failed", self.describe())
            err = ConnectionClosed(
                f"the stdio reader of {self.describe()} failed: {type(exc).__name__}",
                exit_code=proc.poll(),
                stderr_tail=self.stderr_tail,
            )
            err.__cause__ = exc
            self._fail(err)
        finally:
            baton = self._baton
            assert baton is not None
            # A caller may be reading: close the pipe only once it let go.
            got = baton.lock.acquire(timeout=1.0)
            stream.close()
            if got:
                baton.lock.release()

    def _pump(self, proc: subprocess.Popen[bytes], fd: int) -> None:
        baton = self._baton
        assert baton is not None
        self._next_check = time.monotonic() + _POLL
        kicks = baton.kicks
        while True:
            if not self._closing.is_set():
                baton.park(self._stop_reader.is_set, kicks)  # while a caller reads
            if not baton.lock.acquire(timeout=_POLL):
                if self._stop_reader.is_set():
                    return
                continue
            try:
                outcome, kicks = self._pump_holding(proc, fd, baton)
            finally:
                baton.lock.release()
            if outcome == "stop":
                return
            if outcome == "eof":
                break
        if not self._closing.is_set():  # EOF
            self._framer.flush()  # a last line without its newline
            self._fail(self._death_error(f"MCP server {self.describe()} closed its stdout"))

    def _pump_holding(self, proc: subprocess.Popen[bytes], fd: int, baton: ReadBaton) -> tuple[str, int]:
        """Read until EOF, stop, or a quiet moment when a caller could read (``"yield"``)."""
        kicks = baton.kicks
        ready, closing = self._ready, self._closing.is_set
        while True:
            if ready(_POLL):
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    return "eof", kicks
                if not closing():
                    self._feed(chunk)
                    # Read before the quiet check: a waiter registered after it kicks after it.
                    kicks = baton._kicks
                    quiet = self._quiet
                    if quiet is not None and quiet() and not closing():
                        baton.linger()
                        return "yield", kicks
            elif self._stop_reader.is_set():
                return "stop", kicks
            if self._closing.is_set():
                self._framer.reset()  # from now on stdout is only drained
                if self._stop_reader.is_set():
                    return "stop", kicks
                continue
            if time.monotonic() >= self._next_check:
                self._next_check = time.monotonic() + _POLL
                if proc.poll() is not None:
                    # Exited while something (a grandchild) may still hold
                    # stdout: take what is already in the pipe, then report.
                    self._drain_after_exit(fd)
                    self._fail(self._death_error(f"MCP server {self.describe()} exited"))

    def read_for(self, done: Callable[[], bool], timeout: float | None, pending: Callable[[], int]) -> None:
        """Read replies in the calling thread until ``done()``; see :class:`ReadBaton`.

        Only when no other reply is awaited (``pending()``, the number of
        replies awaited, is 1) and the reader thread is parked; otherwise the
        reader thread is woken.

        Returns early (the reader thread takes over) after ``timeout``, after
        ``_POLL`` seconds without data, at EOF or when closing: the reader
        thread alone reports deaths.
        """
        if self._quiet is None:
            self._quiet = lambda: pending() == 0
        baton, proc = self._baton, self._proc
        if baton is None or proc is None or proc.stdout is None or self._closing.is_set():
            return
        if self._owner_pid != os.getpid():
            return
        if pending() > 1 or not baton.claim():
            baton.kick()  # the reader thread reads for us: it must not linger
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        closing, stopping = self._closing.is_set, self._stop_reader.is_set
        try:
            fd = proc.stdout.fileno()
            ready = self._ready
            while not done() and not closing() and not stopping():
                wait = _POLL if deadline is None else min(_POLL, deadline - time.monotonic())
                if wait <= 0 or not ready(wait):
                    return
                chunk = os.read(fd, _CHUNK)
                if not chunk or closing():
                    return
                self._feed(chunk)
        except OSError:
            return  # the reader thread sees the same failure and reports it
        finally:
            # Other replies awaited: the reader thread must resume at once.
            baton.release(pending() > (0 if done() else 1))

    def _drain_after_exit(self, fd: int) -> None:
        deadline = time.monotonic() + 0.5  # bounded: a grandchild may keep writing
        while time.monotonic() < deadline and wait_readable(fd, 0):
            chunk = os.read(fd, _CHUNK)
            if not chunk or self._closing.is_set():
                break
            self._feed(chunk)
        if not self._closing.is_set():
            self._framer.flush()

    def _feed(self, chunk: bytes) -> None:
        try:
            self._framer.feed(chunk, self._closing.is_set)
        except LineTooLong:
            self._framer.reset()
            self._fail(
                MessageTooLarge(
                    f"a message from MCP server {self.describe()} exceeded "
                    f"max_message_bytes={self._max}",
                    stderr_tail=self.stderr_tail,
                )
            )

    def _deliver(self, message: Any) -> None:
        if self._closing.is_set() or self._on_message is None:
            return
        try:
            self._on_message(message)
        except Exception:
            log.exception("on_message callback of %s raised; message dropped", self.describe())
