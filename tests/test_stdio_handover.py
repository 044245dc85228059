"""The stdio writer hand-over (mcpsync/transports/stdio/handover.py), over a real pipe."""

from __future__ import annotations

import os
import select
import threading
import time

from mcpsync.transports.stdio.handover import CutShort, Handover


def test_release_returns_when_the_connection_closes_with_frames_handed_over() -> None:
    # A frame handed over, then close() begins before the holder lets go: _drain writes
    # nothing once closing, and release() used to take the free lock again forever (100% CPU).
    read_fd, write_fd = os.pipe()
    closing = threading.Event()
    try:
        handover = Handover(write_fd, closing.is_set, lambda exc: None)
        handover.lock.acquire()  # the holder, writing
        assert handover.offer(b"x\n", None)  # handed over: the holder is to write it
        closing.set()
        releaser = threading.Thread(target=handover.release, args=(None,), name="test-handover-release", daemon=True)
        releaser.start()
        releaser.join(2)
        if releaser.is_alive():  # spinning on the queued frame: empty the queue so it stops, then fail
            handover._queue.clear()
            releaser.join(2)
            raise AssertionError("release() did not return once the connection was closing")
        assert not handover.lock.locked()
    finally:
        os.close(read_fd)
        os.close(write_fd)


# -- the holder waits for others' frames only by its own deadline ---------------------------------

FRAME = b"t" * 10000 + b"\n"  # a frame of a thread with a later deadline (or none)


class Pipe:
    """A non-blocking pipe filled to the brim, then one page read out: 4096 bytes of room."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)
        self.filled = 0
        while True:
            try:
                self.filled += os.write(self.write_fd, b"f" * 65536)
            except BlockingIOError:
                break
        self.got = bytearray(os.read(self.read_fd, 4096))
        self.closing = threading.Event()
        self.failed: list[OSError] = []
        self.handover = Handover(self.write_fd, self.closing.is_set, self.failed.append)

    def hand_over(self, end: float | None) -> None:
        """A holder writing its own frame; a thread with deadline *end* hands FRAME to it."""
        self.handover.lock.acquire()
        assert self.handover.offer(FRAME, end)

    def release_by(self, seconds: float) -> float:
        """The holder lets go with *seconds* of its own deadline left; how long that took."""
        began = time.monotonic()
        holder = threading.Thread(target=self.handover.release, args=(time.monotonic() + seconds,),
                                  name="test-handover-holder", daemon=True)
        holder.start()
        holder.join(3.0)
        if holder.is_alive():  # the old behaviour: waiting by the others' deadline; free it, then fail
            self.closing.set()
            holder.join(3.0)
            raise AssertionError("the holder waited for room beyond its own deadline")
        return time.monotonic() - began

    def read_all(self, total: int) -> None:
        """Read until *total* bytes came, or 5 s passed (a read never blocks past that)."""
        until = time.monotonic() + 5.0
        while len(self.got) < total and time.monotonic() < until:
            if select.select([self.read_fd], [], [], max(0.0, until - time.monotonic()))[0]:
                self.got += os.read(self.read_fd, 65536)

    def wait_unlocked(self) -> bool:
        until = time.monotonic() + 5.0
        while self.handover.lock.locked() and time.monotonic() < until:
            time.sleep(0.01)
        return not self.handover.lock.locked()

    def close(self) -> None:
        self.closing.set()
        self.wait_unlocked()
        os.close(self.read_fd)
        os.close(self.write_fd)


def test_the_holder_leaves_a_frame_the_pipe_will_not_take_to_a_writer_of_its_own() -> None:
    pipe = Pipe()
    try:
        handover = pipe.handover
        pipe.hand_over(None)  # the holder has 0.2 s left; the frame's thread has no deadline
        took = pipe.release_by(0.2)
        assert took < 2.0
        assert handover.lock.locked() and handover.stuck  # the detached writer holds it, waiting
        assert not handover.offer(b"x\n", None)  # stuck: newcomers wait for the lock by their own deadlines
        pipe.read_all(pipe.filled + len(FRAME))  # the server reads again
        assert pipe.wait_unlocked()
        assert bytes(pipe.got[pipe.filled:]) == FRAME  # whole, after what was there
        assert pipe.failed == [] and not handover.stuck
    finally:
        pipe.close()


def test_a_detached_writer_that_runs_out_of_time_mid_frame_fails_the_connection() -> None:
    pipe = Pipe()
    try:
        pipe.hand_over(time.monotonic() + 0.5)  # later than the holder's, not endless
        assert pipe.release_by(0.1) < 2.0
        assert pipe.wait_unlocked()  # by the frame's own deadline
        assert [type(exc) for exc in pipe.failed] == [CutShort]  # 4096 bytes of it are in the pipe
    finally:
        pipe.close()


def test_a_detached_writer_ends_when_the_connection_closes() -> None:
    pipe = Pipe()
    try:
        pipe.hand_over(None)
        assert pipe.release_by(0.1) < 2.0
        assert pipe.handover.lock.locked()
        pipe.closing.set()
        assert pipe.wait_unlocked()  # within write_until's 0.1 s tick
        assert pipe.failed == []  # the close fails the callers, not the writer
        until = time.monotonic() + 5.0
        while any(t.name == "mcpsync-stdio-handover" for t in threading.enumerate()) and time.monotonic() < until:
            time.sleep(0.01)
        assert not [t for t in threading.enumerate() if t.name == "mcpsync-stdio-handover"]
    finally:
        pipe.close()
