"""A fast path: a caller that finds another thread writing hands its frame over.

The plain path: every caller takes the write lock in turn.  Threads sharing one
connection then queue on it: each waiter wakes in turn, takes the GIL, writes one frame
and wakes the next, a convoy of thread switches as long as a call's Python (measured in
docs/threading.rst: 8 threads on one connection lose about a tenth of their calls to it).
Here a caller that finds the lock held appends its frame to a queue and goes on to wait
for its reply; whoever holds the lock writes every frame queued so far in one
``os.write`` before it lets go.

Rules kept: a frame is written whole, never interleaved with another; no frame is left
behind (whoever releases the lock looks at the queue again); a queued frame whose caller's
deadline passed before it went out is dropped (its caller's wait times out as if it had
been written); while a write waits for room in the pipe (the server stopped reading), no
frame is handed over, so callers wait for the lock by their own deadlines again.  A frame
cut in half closes the connection, as on the plain path.

The holder waits for room for the frames handed to it only by its own deadline: its call
must end by its ``timeout=``, and theirs may be later (or none).  What the pipe has not
taken by then is finished by a short-lived thread that takes the lock over and waits by
their deadlines (a server that stopped reading its stdin, with several threads on one
connection: the only case that starts it).  What it cannot finish fails the connection
through *failed*, as the callers' own writes would have.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Callable

from mcpsync.rpc.deadline import now
from mcpsync.transports.stdio.pipes import write_until

__all__ = ["Handover"]

#: Frames are handed over (and joined into one write) up to this many bytes (a pipe holds 64 KiB).
_JOIN_LIMIT = 65536
_CUT = "frames handed over were cut short: the server stopped reading its stdin"


class Handover:
    """The write lock of one pipe and the frames handed to its holder.

    :param closing: true once the connection is closing (writes stop).
    :param failed: told, on the detached writer's thread, why it could not finish
        (:class:`CutShort`, or the :class:`OSError` of a broken pipe).
    """

    def __init__(self, fd: int, closing: Callable[[], bool], failed: Callable[[OSError], None]) -> None:
        self.lock = threading.Lock()
        self._fd = fd
        self._closing = closing
        self._failed = failed
        self._queue: deque[tuple[bytes, float | None]] = deque()  # append/popleft are atomic
        #: Set while a write waits for room in the pipe: no frame is handed over then.
        self.stuck = False

    def offer(self, data: bytes, end: float | None) -> bool:
        """Hand *data* (to be written by *end*) to the thread writing now, if that is worth it.

        ``False``: refused; the caller takes the lock the plain way.  Once queued, the
        frame is written by whoever holds the lock (the caller itself, if the lock came
        free meanwhile: then it holds it on return, and must :meth:`release` it).
        """
        if self.stuck or len(data) > _JOIN_LIMIT or self._closing():
            return False
        self._queue.append((data, end))
        if self.lock.acquire(False):  # the holder released before it saw our frame: write it ourselves
            self.release(end)
        return True

    def release(self, end: float | None) -> None:
        """Holding the lock: write what was handed over, then let go; looks again after.

        :param end: the holder's own deadline: it waits for room for others' frames
            only so long, then leaves the rest (and the lock) to a thread of their own.
        :raises OSError: the pipe broke (the lock is released).
        :raises CutShort: frames handed over were written only in part (the lock is released).
        """
        lock, queue = self.lock, self._queue
        while True:
            detached = False
            try:
                if queue:  # usually empty: one frame, written by its own caller
                    detached = self._drain(end)
            finally:
                if not detached:
                    lock.release()
            # Closing: _drain writes nothing more, so looking again would spin; the frames left
            # are dropped, and their callers are failed by the connection's close.
            if detached or not queue or self._closing() or not lock.acquire(False):
                return  # detached, empty, closing, or the new holder writes it

    def _drain(self, end: float | None) -> bool:
        """Write the frames queued; ``True`` once a detached writer holds the lock (and the rest)."""
        queue = self._queue
        while queue and not self._closing():
            frames = []
            while queue:
                frames.append(queue.popleft())
            t = now()
            frames = [frame for frame in frames if frame[1] is None or frame[1] > t]  # late: dropped unsent
            if not frames:
                continue
            data = b"".join([frame[0] for frame in frames])
            try:
                written = os.write(self._fd, data)
            except BlockingIOError:
                written = 0
            if written == len(data):
                continue
            ends = [frame[1] for frame in frames]
            theirs = None if None in ends else max(e for e in ends if e is not None)
            self.stuck = True
            detached = False
            try:
                if end is not None and (theirs is None or theirs > end):
                    written += write_until(self._fd, memoryview(data)[written:], end, self._closing)
                    if written < len(data) and not self._closing():
                        detached = self._detach(data[written:], theirs, started=written > 0)
                        if detached:
                            return True
                written += write_until(self._fd, memoryview(data)[written:], theirs, self._closing)
            finally:
                if not detached:
                    self.stuck = False
            if 0 < written < len(data) and not self._closing():
                raise CutShort(_CUT)
        return False

    def _detach(self, rest: bytes, end: float | None, *, started: bool) -> bool:
        """Leave *rest* and the lock to a new thread writing by *end*; ``False`` if none can start."""
        if sys.is_finalizing():  # no new thread now: the holder waits, as before
            return False
        try:
            threading.Thread(target=self._finish, args=(rest, end, started), name="mcpsync-stdio-handover",
                             daemon=True).start()
        except RuntimeError:  # "can't start new thread": too many, or the interpreter is shutting down
            return False
        return True

    def _finish(self, rest: bytes, end: float | None, started: bool) -> None:
        """The detached writer: the rest of a batch by its callers' *end*, then what was handed
        over meanwhile; it holds the lock until done, and ends within 0.1 s of closing."""
        try:
            try:
                written = write_until(self._fd, rest, end, self._closing)
            finally:
                self.stuck = False
            if written < len(rest) and (started or written) and not self._closing():
                raise CutShort(_CUT)
        except OSError as exc:  # CutShort too
            self.lock.release()
            self._failed(exc)
            return
        try:
            self.release(None)  # no caller of its own: it waits by the frames' deadlines
        except OSError as exc:
            self._failed(exc)


class CutShort(OSError):
    """Frames handed over could not be written whole by their deadlines; the pipe holds half of one."""
