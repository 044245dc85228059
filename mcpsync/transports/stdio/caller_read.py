"""A fast path: a caller whose request is the only one awaited reads its reply itself.

The plain path: the reader thread (:mod:`.reader`) reads every message and the waiting
caller is woken with its reply, which costs two thread switches, more than the rest of a
call over a pipe (measured in docs/threading.rst: without this, sequential calls run at
about half the rate).  With it, :meth:`StdioTransport.send` of a request whose reply is
the only one awaited goes on reading stdout in the caller's thread until that reply is
in, through the same framer and the same ``on_message``, as the HTTP transport's send
reads its own exchange; the reader thread is parked meanwhile.  Who reads is decided by
a :class:`ReadBaton`: exactly one thread holds it at a time, and taking it never blocks.
docs/threading.rst gives the rules.

A second saving, on top: before it sleeps in ``poll``, the caller polls without sleeping
for up to :data:`SPIN` (50 µs).  A fast server's reply then finds the caller awake, and
the wake-up it would otherwise cost is gone; on a 2-vCPU VM that wake-up (the server on
the other CPU) was more than half of a sequential call: sequential calls 9.3k -> 16.7k
calls/s on the bench's raw server, 11 interleaved rounds against the tree without the
spin (docs/threading.rst, bench/RESULTS.md).  The spin pays only where it wins:
a spin that misses (a slower server) turns spinning off for the next 1, 2, 4 ... 256
reads, a caller that finds other replies awaited turns it off for 256 reads (threads
sharing the connection would lose the GIL to the spin), and a process allowed on one CPU
never spins (the server could not run meanwhile).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from mcpsync.rpc.deadline import Deadline
from mcpsync.rpc.reply import normalize_id
from mcpsync.transports.base import CANCELLED, cancelled_request_id

__all__ = ["OwnReply", "ReadBaton"]

#: How long a caller reads without data before the reader thread takes over.
_POLL = 0.1
_CHUNK = 65536
#: How long a caller polls for its reply without sleeping, first (seconds).
SPIN = 50e-6
#: The longest run of reads without a spin after spins that missed.
_MAX_BACKOFF = 256


def _cpus() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity`` where there is one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


class ReadBaton:
    """Who reads the pipe now: the background reader thread or a caller.

    The reader parks (:meth:`park`) when it leaves the connection quiet (no reply
    awaited) and after a caller read, for :attr:`LINGER` seconds, so back-to-back calls
    never wake it; a caller that cannot read itself wakes it with :meth:`kick`.  Whoever
    holds :attr:`lock` is the only reader.  Claims never block, so concurrent callers
    never hand the pipe back and forth.
    """

    #: How long the background reader stays parked when nobody kicks it.
    LINGER = 0.005

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # Short sections take the plain mutex; only the parked reader waits on the condition.
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._claims = 0
        self._claim_kicks = 0  # kicks when the pipe was claimed: one since then must not be lost
        self._resume_at = 0.0
        self._parked = False
        #: Bumped by every :meth:`kick`; read before deciding to park.
        self.kicks = 0

    def park(self, stop: Callable[[], bool], kicks_seen: int) -> None:
        """Reader (not holding :attr:`lock`): wait while callers read, or briefly.

        *kicks_seen* is :attr:`kicks` from before the reader found the connection quiet:
        a kick since then means a waiter needs it now.
        """
        with self._cond:
            if self.kicks != kicks_seen:
                self._resume_at = 0.0
            self._parked = True
            try:
                while not stop():
                    if self._claims == 0:
                        left = self._resume_at - time.monotonic()
                        if left <= 0:
                            return
                    else:
                        # A caller reads.  Its release wakes nobody (that would cost the switch
                        # we avoid), so look again soon: a notification arriving after it must
                        # wait ~LINGER only.
                        left = self.LINGER
                    self._cond.wait(min(left, 0.1))
            finally:
                self._parked = False

    def linger(self) -> None:
        """Reader: it is about to park with nobody waiting."""
        with self._mutex:
            self._resume_at = time.monotonic() + self.LINGER

    def kick(self) -> None:
        """A caller waits the normal way: the reader must read now."""
        with self._mutex:
            self.kicks += 1
            self._resume_at = 0.0
            if self._parked and not self._claims:
                self._cond.notify_all()

    def claim(self) -> bool:
        """Caller: become the reader if nobody reads."""
        with self._mutex:
            if not self.lock.acquire(blocking=False):
                return False
            self._claims += 1
            self._claim_kicks = self.kicks
            return True

    def release(self, resume_now: bool) -> None:
        """Caller: stop reading; *resume_now* when other replies are awaited.

        A kick while the pipe was claimed woke nobody: the reader resumes now too (the
        caller may have looked at the awaited replies before the kicker registered its own).
        """
        with self._mutex:
            self.lock.release()
            self._claims -= 1
            resume_now = resume_now or self.kicks != self._claim_kicks
            self._resume_at = 0.0 if resume_now else time.monotonic() + self.LINGER
            if resume_now and self._parked:
                self._cond.notify_all()


class OwnReply:
    """The requests awaited on one pipe, and the caller's own read of its reply.

    :param ready: waits (seconds) until stdout is readable.
    :param feed: frames a chunk of stdout and delivers its messages.
    :param closing: whether the connection is closing (the reader alone reports deaths).
    """

    def __init__(self, fd: int, ready: Callable[[float], bool], feed: Callable[[bytes], None],
                 closing: Callable[[], bool]) -> None:
        self.baton = ReadBaton()
        self._fd, self._ready, self._feed, self._closing = fd, ready, feed, closing
        #: Ids of the requests sent and not answered (nor cancelled); set operations are atomic.
        self.awaited: set[Any] = set()
        # Read and written only by the baton's holder.  One CPU: the server needs the one we
        # would spin on, so never spin.
        self._skip = 0 if _cpus() > 1 else -1  # reads left without a spin; -1: never spin
        self._backoff = 1

    def sending(self, message: Mapping[str, Any]) -> Any:
        """Note a message about to be written; the request id whose reply it awaits, if any."""
        if "method" not in message:
            return None
        if message["method"] == CANCELLED:
            self.awaited.discard(cancelled_request_id(message))
            return None
        request_id = message.get("id")
        if request_id is not None:
            self.awaited.add(request_id)
        return request_id

    def delivered(self, message: Any) -> None:
        """A message was read (by whichever thread reads): a reply ends its wait."""
        if type(message) is dict and "method" not in message:
            request_id = message.get("id")
            # As the session matches it: "7" answers 7, and an id that is a list must not kill the reader.
            self.awaited.discard(request_id if type(request_id) is int else normalize_id(request_id))

    def read_reply(self, request_id: Any, deadline: Deadline | None) -> None:
        """Read stdout in the caller's thread until *request_id*'s reply is in, when it is the
        only reply awaited and nobody else reads; else wake the reader thread.

        Returns early (the reader thread takes over) at the deadline, after 0.1 s without
        data, at EOF or when closing.
        """
        baton, awaited = self.baton, self.awaited
        if request_id not in awaited:
            return  # already read (by the reader thread, or a caller before its own reply)
        if len(awaited) > 1 or not baton.claim():
            baton.kick()  # the reader thread reads for us: it must not linger
            if self._skip >= 0:
                # Threads share this connection: a spin would take the GIL from them between
                # their calls (8 threads lost ~5 %).  Not from the baton's holder: a benign race.
                self._skip = _MAX_BACKOFF
            return
        try:
            spun = self._spin()
            # Its id leaves *awaited* when its reply is delivered, whoever read it: a reply read
            # before the claim must not keep this caller reading the pipe for everyone else.
            while request_id in awaited and not self._closing():
                wait = _POLL if deadline is None else deadline.remaining(_POLL)
                if not wait or not (spun or self._ready(wait)):
                    return
                spun = False
                chunk = os.read(self._fd, _CHUNK)
                if not chunk or self._closing():
                    return
                self._feed(chunk)
        except OSError:
            return  # the reader thread sees the same failure and reports it
        finally:
            baton.release(bool(self.awaited))  # others' replies awaited: the reader resumes at once

    def _spin(self) -> bool:
        """Holding the baton: poll without sleeping for up to :data:`SPIN`; whether stdout is readable.

        A miss doubles how many reads skip the spin next (up to :data:`_MAX_BACKOFF`); a hit
        resets it.  Bounded by SPIN, not by the call's deadline: 50 µs is within any timeout's
        resolution.
        """
        if self._skip:
            if self._skip > 0:
                self._skip -= 1
            return False
        ready, clock = self._ready, time.perf_counter
        end = clock() + SPIN
        while not ready(0):
            if clock() >= end:
                self._skip = self._backoff
                self._backoff = min(2 * self._backoff, _MAX_BACKOFF)
                return False
        self._backoff = 1
        return True
