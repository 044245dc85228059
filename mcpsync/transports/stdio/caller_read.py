"""A fast path: a caller waiting for the only pending reply reads stdout itself.

The plain path: the reader thread (:mod:`.reader`) reads every message and the
waiting caller is woken with its reply, which costs two thread switches, more
than the rest of a call over a pipe.  With this fast path, a caller waiting
for the only pending reply reads the server's stdout in its own thread
(``StdoutReading.read_for``, offered to the session through
:meth:`~mcpsync.transports.base.Transport.caller_reader`), through the same
framer and the same session code; the reader thread is parked meanwhile.
:class:`ReadBaton` decides who reads: exactly one thread holds it at a time,
and taking it never blocks.  docs/threading.rst gives the rules and the
benchmark.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["ReadBaton"]


class ReadBaton:
    """Who reads a pipe now: the background reader thread or a waiting caller.

    A round trip through a reader thread costs two thread switches, more than
    the rest of a call.  So a caller waiting for the only pending reply reads
    the pipe itself (:meth:`claim` … :meth:`release`) when the background
    reader is parked.  The reader parks (:meth:`park`) when it leaves the
    connection quiet (no reply awaited) and after a caller read, for
    :attr:`LINGER` seconds, so back-to-back calls never wake it; a caller that
    waits the normal way, with other replies awaited, wakes it with :meth:`kick`.
    Whoever holds :attr:`lock` is the only reader.  Claims never block, so
    concurrent callers never hand the pipe back and forth.
    """

    #: How long the background reader stays parked when nobody kicks it.
    LINGER = 0.005

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # Short sections take the plain mutex (no Python-level Condition frames);
        # only the parked reader waits on the condition.
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._claims = 0
        self._resume_at = 0.0
        self._parked = False
        self._kicks = 0

    @property
    def kicks(self) -> int:
        """Bumped by every :meth:`kick`; read before deciding to park."""
        return self._kicks

    def park(self, stop: Callable[[], bool], kicks_seen: int) -> None:
        """Background reader (not holding :attr:`lock`): wait while callers read or briefly.

        ``kicks_seen`` is :attr:`kicks` from before the reader found the
        connection quiet: a kick since then means a waiter needs it now.
        """
        with self._cond:
            if self._kicks != kicks_seen:
                self._resume_at = 0.0
            self._parked = True
            try:
                while not stop():
                    if self._claims == 0:
                        left = self._resume_at - time.monotonic()
                        if left <= 0:
                            return
                    else:
                        # A caller reads.  Its release wakes nobody (that would
                        # cost the switch we avoid), so look again soon: a
                        # notification arriving after it must wait ~LINGER only.
                        left = self.LINGER
                    self._cond.wait(min(left, 0.1))
            finally:
                self._parked = False

    def linger(self) -> None:
        """Background reader: it is about to park with nobody waiting."""
        with self._mutex:
            self._resume_at = time.monotonic() + self.LINGER

    def kick(self) -> None:
        """A caller waits the normal way: the background reader must read now."""
        with self._mutex:
            self._kicks += 1
            self._resume_at = 0.0
            if self._parked and not self._claims:
                # While a caller reads, waking the reader is a wasted thread switch: it
                # could not read, and the caller resumes it when it lets go (release).
                self._cond.notify_all()

    def claim(self) -> bool:
        """Caller: become the reader if the background reader is parked."""
        with self._mutex:
            if not self.lock.acquire(blocking=False):
                return False
            self._claims += 1
            return True

    def release(self, resume_now: bool) -> None:
        """Caller: stop reading; ``resume_now`` when other replies are awaited."""
        with self._mutex:
            self.lock.release()
            self._claims -= 1
            self._resume_at = 0.0 if resume_now else time.monotonic() + self.LINGER
            if resume_now and self._parked:
                # Otherwise the parked reader's own timeout re-checks: waking it
                # after every call would cost the thread switch we avoid.
                self._cond.notify_all()
