"""The stdio transport's reader thread (``mcpsync-stdio-reader-N``).

It reads the server's stdout, frames it into JSON values (each handed to
``on_message`` by the framer) and reports the server's death: EOF, or the process
exiting while something (a grandchild) still holds stdout open.  It never runs user
code: the session only queues callbacks for the dispatcher threads.  While a caller
reads its own reply (:mod:`.caller_read`) the reader is parked; it alone reports deaths.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Protocol

from mcpsync.exceptions import ConnectionClosed, MessageTooLarge
from mcpsync.transports.run_state import join_thread
from mcpsync.transports.stdio.caller_read import OwnReply, ReadBaton
from mcpsync.transports.stdio.pipes import JsonLineFramer, LineTooLong, close_holding, readable_waiter

__all__ = ["POLL", "StdoutReader"]

log = logging.getLogger(__name__)

#: How often blocked threads re-check for close and for the process's exit.
POLL = 0.1
_CHUNK = 65536


class Owner(Protocol):
    """What the reader needs of its transport."""

    @property
    def stderr_tail(self) -> str: ...

    def describe(self) -> str: ...

    def fail(self, exc: ConnectionClosed, *, inline: bool = False) -> bool: ...

    def death_error(self, message: str, cause: BaseException | None = None) -> ConnectionClosed: ...


class StdoutReader:
    """Reads one server's stdout on a thread of its own until the connection ends."""

    def __init__(self, owner: Owner, proc: subprocess.Popen[bytes], framer: JsonLineFramer,
                 closing: threading.Event) -> None:
        self._owner = owner
        self._proc = proc
        self._framer = framer
        self._closing = closing
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        #: The callers' fast path: who reads, and which replies are awaited.
        self.own = OwnReply(fd, readable_waiter(fd), self.feed, closing.is_set)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether the thread runs (and will close stdout when it ends)."""
        return self._thread is not None and self._thread.is_alive()

    def is_current(self) -> bool:
        """Whether the calling thread is this reader."""
        return self._thread is threading.current_thread()

    def start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Make the thread end (stdout is only drained once closing) and join it, bounded."""
        self._stop.set()
        join_thread(self._thread, timeout)

    def _run(self) -> None:
        proc, owner = self._proc, self._owner
        assert proc.stdout is not None
        try:
            self._pump(proc.stdout.fileno())
        except BaseException as exc:  # the reader never dies silently
            log.exception("stdio reader of %s failed", owner.describe())
            err = ConnectionClosed(f"the stdio reader of {owner.describe()} failed: {type(exc).__name__}",
                                   exit_code=proc.poll(), stderr_tail=owner.stderr_tail)
            err.__cause__ = exc
            owner.fail(err)
        finally:
            # Holding the read baton, as every read: a caller lets go within POLL once closing.
            if not close_holding(self.own.baton.lock, proc.stdout, 1.0):
                log.warning("a caller still reads the stdout of %s: its pipe is left open", owner.describe())

    def _pump(self, fd: int) -> None:
        baton, closing, stop = self.own.baton, self._closing.is_set, self._stop.is_set
        ready = readable_waiter(fd)
        kicks = baton.kicks
        while True:
            if not closing():
                baton.park(stop, kicks)  # while a caller reads
            if not baton.lock.acquire(timeout=POLL):
                if stop():
                    return
                continue
            try:
                outcome, kicks = self._pump_holding(fd, baton, ready)
            finally:
                baton.lock.release()
            if outcome == "stop":
                return
            if outcome == "eof":
                break
        if not closing():  # EOF
            self._framer.flush()  # a last line without its newline
            self._owner.fail(self._owner.death_error(f"MCP server {self._owner.describe()} closed its stdout"))

    def _pump_holding(self, fd: int, baton: ReadBaton, ready: Callable[[float], bool]) -> tuple[str, int]:
        """Read until EOF, stop, or a quiet moment when a caller could read (``"yield"``)."""
        closing, stop, own = self._closing.is_set, self._stop.is_set, self.own
        kicks = baton.kicks
        next_check = time.monotonic() + POLL
        while True:
            if ready(POLL):
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    return "eof", kicks
                if not closing():
                    self.feed(chunk)
                    # Read before the quiet check: a waiter registered after it kicks after it.
                    kicks = baton.kicks
                    if not own.awaited and not closing():
                        baton.linger()
                        return "yield", kicks
            elif stop():
                return "stop", kicks
            if closing():
                self._framer.reset()  # from now on stdout is only drained
                if stop():
                    return "stop", kicks
                continue
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + POLL
                if self._proc.poll() is not None:
                    # Exited while something (a grandchild) may still hold stdout: take what
                    # is already in the pipe, then report.
                    self._drain_after_exit(fd, ready)
                    self._owner.fail(self._owner.death_error(f"MCP server {self._owner.describe()} exited"))

    def _drain_after_exit(self, fd: int, ready: Callable[[float], bool]) -> None:
        deadline = time.monotonic() + 0.5  # bounded: a grandchild may keep writing
        while time.monotonic() < deadline and ready(0):
            chunk = os.read(fd, _CHUNK)
            if not chunk or self._closing.is_set():
                break
            self.feed(chunk)
        if not self._closing.is_set():
            self._framer.flush()

    def feed(self, chunk: bytes) -> None:
        """Frame *chunk* (read by this thread or a caller) and deliver its messages."""
        try:
            self._framer.feed(chunk, self._closing.is_set)
        except LineTooLong:
            self._framer.reset()
            owner = self._owner
            owner.fail(MessageTooLarge(f"a message from MCP server {owner.describe()} exceeded "
                                       f"max_message_bytes={self._framer.cap}", stderr_tail=owner.stderr_tail))
