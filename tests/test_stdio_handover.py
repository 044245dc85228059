"""The stdio writer hand-over (mcpsync/transports/stdio/handover.py), over a real pipe."""

from __future__ import annotations

import os
import threading

from mcpsync.transports.stdio.handover import Handover


def test_release_returns_when_the_connection_closes_with_frames_handed_over() -> None:
    # A frame handed over, then close() begins before the holder lets go: _drain writes
    # nothing once closing, and release() used to take the free lock again forever (100% CPU).
    read_fd, write_fd = os.pipe()
    closing = threading.Event()
    try:
        handover = Handover(write_fd, closing.is_set)
        handover.lock.acquire()  # the holder, writing
        assert handover.offer(b"x\n", None)  # handed over: the holder is to write it
        closing.set()
        releaser = threading.Thread(target=handover.release, name="test-handover-release", daemon=True)
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
