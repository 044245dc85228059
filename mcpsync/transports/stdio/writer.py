"""The stdio write path: whole frames to the server's stdin, concurrent frames in one write.

Many threads calling through one connection used to queue on the write lock:
each waiter woke in turn, took the GIL, wrote one frame and woke the next (a
convoy of thread switches, each as long as a call's Python).  Here a caller
that finds a write under way *hands its frame over* (:meth:`FrameWriter.offer`)
and goes straight to waiting for its reply; whoever holds the lock writes
every frame queued so far in one ``os.write``.

Rules kept (docs/threading.rst):

* a frame is written whole, never interleaved with another (one writer at a time);
* no frame is left behind: whoever releases the lock looks at the queue again
  (:meth:`FrameWriter.release`), and an offer made while the lock is free takes it;
* nobody writes for the others for long: after :attr:`FrameWriter.ROUNDS`
  writes the holder refuses new frames (callers then wait for the lock as
  they used to) and writes only what was already handed over;
* every frame keeps its own deadline: a frame nothing of which was written by
  then is dropped and reported ``UNSENT`` (the connection stays usable); one
  cut in half is reported ``CUT`` (the connection must close);
* the holder's own caller is never kept past its deadline by others' frames:
  when the pipe is full, frames still waiting go to a short-lived writer
  thread (``mcpsync-stdio-writer-N``), as a blocking ``request_async`` write does.

Only the mechanism lives here; :class:`~.transport.StdioTransport` turns the
outcomes into exceptions.  Nothing here starts a thread at import.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from mcpsync.transports.stdio.pipes import write_until

__all__ = ["CLOSING", "CUT", "Frame", "FrameWriter", "UNSENT", "WRITTEN"]

#: Frames are joined into one write up to this many bytes (a pipe holds 64 KiB on Linux).
_JOIN_LIMIT = 65536

#: Outcomes of one frame.
WRITTEN, UNSENT, CUT, CLOSING = "written", "unsent", "cut", "closing"

#: Reports what became of a handed-over frame: ``(frame, outcome, error)``.
FrameReport = Callable[["Frame", str, "OSError | None"], None]


class Frame:
    """One encoded message waiting to be written, with its deadline."""

    __slots__ = ("data", "deadline", "limit", "message", "on_error", "sent")

    def __init__(self, data: bytes, deadline: float | None, limit: float | None, message: Any,
                 on_error: Callable[[BaseException], None] | None) -> None:
        #: What is left to write (a view into the encoded message once started).
        self.data: bytes | memoryview = data
        #: ``time.monotonic()`` by which the write must be done; ``None``: until close.
        self.deadline = deadline
        #: The seconds that deadline stands for (for the error message).
        self.limit = limit
        #: The message (for the error message: its method).
        self.message = message
        #: Told when a handed-over frame could not be written (its caller waits for a reply).
        self.on_error = on_error
        #: Bytes already written (a frame started must be finished or the connection closed).
        self.sent = 0


class FrameWriter:
    """Serialises writes of whole frames to one non-blocking fd; coalesces concurrent ones.

    :param closing: true once the connection is closing (writes stop).
    :param report: told the outcome of every *handed-over* frame that was not
        simply written (the holder's own frame is returned instead); the
        ``OSError`` of a broken pipe comes with it.
    :param name: the short-lived writer thread's name.
    """

    def __init__(self, closing: Callable[[], bool], report: FrameReport, name: str) -> None:
        #: Held by whoever writes; the transport also takes it to close stdin.
        self.lock = threading.Lock()
        #: The pipe's fd; valid while not closing, read under :attr:`lock`.
        self.fd = -1
        self._closing = closing
        self._report = report
        self._name = name
        self._queue: deque[Frame] = deque()  # append/popleft are atomic under the GIL
        self._helper: threading.Thread | None = None
        #: Set by a writer that has written for others long enough: callers then
        #: take the lock in turn instead of handing their frame over (see ROUNDS).
        self.refusing = False

    #: Writes a holder makes (its own and others' frames) before it stops taking more.
    ROUNDS = 4

    def offer(self, frame: Frame) -> bool:
        """Hand *frame* to the thread writing now; ``True`` if that worked.

        ``False`` means the lock was free and is now held by the caller, with
        *frame* still queued: call :meth:`write_holding` with it, as for one's own.
        """
        self._queue.append(frame)
        # A holder that released before our append did not see it: take over.
        return not self.lock.acquire(False)

    def write_holding(self, own: Frame | None) -> tuple[str, bool]:
        """Holding :attr:`lock`: write *own*, then every queued frame; ``(outcome, release)``.

        *outcome* is *own*'s (``WRITTEN`` when there is none).  *release* is
        false when the lock went to the short-lived writer thread with the
        rest (the pipe is full): the caller must not release it then.  A broken
        pipe raises its ``OSError`` (frames still queued are the caller's to
        fail, with the connection); the lock is still held then.
        """
        result = WRITTEN
        queue = self._queue
        rounds = 0
        while True:
            rounds += 1
            if rounds == self.ROUNDS:
                # Every os.write gives up the GIL and a busy process may keep it from
                # us for a while: our caller is not everyone's writer for long.  From
                # now on callers wait their turn; what is queued already is still ours.
                self.refusing = True
            frames: list[Frame] = []
            if own is not None:
                frames.append(own)
            while queue:
                frame = queue.popleft()
                if frame is not own:
                    frames.append(frame)
            if not frames:
                return result, True
            try:
                outcome, rest = self._write(frames, own)
            except OSError as exc:  # a broken pipe: the others learn it here, the caller by the raise
                self._closed(frames, own, exc)
                raise
            if own is not None:
                result, own = outcome, None
            if rest:
                # The pipe is full: the rest is not our caller's wait.  The lock goes with it.
                if self._start_helper(rest):
                    return result, False
                self._write_slowly(rest)
            if not queue:
                return result, True

    def release(self) -> None:
        """Let go of :attr:`lock`; write what was queued meanwhile if nobody else will."""
        lock, queue = self.lock, self._queue
        while True:
            self.refusing = False  # before the release: an offer made now is seen below
            lock.release()
            if not queue or not lock.acquire(False):
                return  # empty, or the new holder writes it
            try:
                _, release = self.write_holding(None)
            except OSError as exc:
                self._fail_queued(exc)
                release = True
            if not release:
                return

    def drop(self) -> list[Frame]:
        """Take every queued frame away (closing: their callers fail with the connection)."""
        frames = []
        queue = self._queue
        while queue:
            frames.append(queue.popleft())
        return frames

    def join(self, timeout: float) -> None:
        """Wait for the short-lived writer thread, if one runs."""
        helper = self._helper
        # A join during interpreter finalization raises on Python 3.14: skip it then.
        if helper is not None and helper is not threading.current_thread() and not sys.is_finalizing():
            helper.join(timeout)

    # -- internals ------------------------------------------------------------

    def _write(self, frames: list[Frame], own: Frame | None) -> tuple[str, list[Frame]]:
        """One ``os.write`` for *frames*; *own*'s outcome and what is left (pipe full)."""
        if self._closing():
            return self._closed(frames, own), []
        if len(frames) == 1:
            data = frames[0].data
        else:
            # Join small frames only: a big one is written from its own buffer (no copy),
            # and what does not fit in this write goes back to the front of the queue.
            size = 0
            for index, frame in enumerate(frames):
                size += len(frame.data)
                if size > _JOIN_LIMIT and index:
                    self._queue.extendleft(reversed(frames[index:]))
                    del frames[index:]
                    break
            data = frames[0].data if len(frames) == 1 else b"".join([frame.data for frame in frames])
        try:
            written = os.write(self.fd, data)
        except BlockingIOError:
            written = 0
        if written == len(data):
            return WRITTEN, []
        # Short: everything up to `written` went out, the rest waits for room.
        left: list[Frame] = []
        for frame in frames:
            size = len(frame.data)
            if written >= size:
                written -= size
                continue
            if written:  # a view, not a copy: the frame may be many MiB
                frame.sent, frame.data, written = written, memoryview(frame.data)[written:], 0
            left.append(frame)
        if own is None or left[0] is not own:
            return WRITTEN, left
        outcome = self._finish(own)
        if outcome in (CUT, CLOSING):
            self._closed(left[1:], None)
            return outcome, []
        return outcome, left[1:]

    def _finish(self, frame: Frame) -> str:
        """Write the rest of *frame* by its deadline (the pipe is full)."""
        size = len(frame.data)
        done = write_until(self.fd, frame.data, frame.deadline, self._closing)
        if done == size:
            return WRITTEN
        if self._closing():
            return CLOSING
        return UNSENT if done == 0 and frame.sent == 0 else CUT

    def _write_slowly(self, frames: list[Frame]) -> None:
        """Frame by frame, each by its own deadline; outcomes reported."""
        for index, frame in enumerate(frames):
            try:
                outcome = self._finish(frame)
            except OSError as exc:
                self._closed(frames[index:], None, exc)
                raise
            if outcome != WRITTEN:
                self._report(frame, outcome, None)
            if outcome in (CUT, CLOSING):
                self._closed(frames[index + 1 :], None)
                return

    def _closed(self, frames: list[Frame], own: Frame | None, exc: OSError | None = None) -> str:
        for frame in frames:
            if frame is not own:
                self._report(frame, CLOSING, exc)
        return CLOSING

    def _fail_queued(self, exc: OSError) -> None:
        for frame in self.drop():
            self._report(frame, CLOSING, exc)

    def _start_helper(self, frames: list[Frame]) -> bool:
        if threading.current_thread() is self._helper:
            return False  # we are the writer thread: go on here
        previous = self._helper
        helper = threading.Thread(target=self._drain, args=(frames,), name=self._name, daemon=True)
        self._helper = helper  # before it runs: it checks whether it is the writer thread
        try:
            helper.start()
        except RuntimeError:  # interpreter exiting: write here
            self._helper = previous
            return False
        return True

    def _drain(self, frames: list[Frame]) -> None:
        """The short-lived writer thread: it was handed the lock with *frames*."""
        try:
            self._write_slowly(frames)
            _, release = self.write_holding(None)
        except OSError as exc:
            self._fail_queued(exc)
            release = True
        except BaseException:  # never die holding the lock
            release = True
            raise
        finally:
            if release:
                self.release()
