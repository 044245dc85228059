"""The stdio fast path of a caller reading its own reply (mcpsync/transports/stdio/caller_read.py).

Unit-level, over a real pipe: which thread reads is not observable through the public API
without timing, and the bench (bench/, "8 threads, one client") measures what it costs.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from mcpsync.rpc.deadline import Deadline
from mcpsync.transports.stdio.caller_read import OwnReply, ReadBaton
from mcpsync.transports.stdio.pipes import readable_waiter


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    os.close(read_fd)
    os.close(write_fd)


def test_a_reply_read_before_the_caller_reads_ends_its_read_at_once(pipe: tuple[int, int]) -> None:
    # With 8 threads on one client the reader thread often delivers a caller's reply before that
    # caller reaches read_reply; the caller used to take the pipe anyway and go on reading every
    # other thread's replies until 0.1 s of silence (8 threads: 0.7x the threaded floor).
    read_fd, write_fd = pipe
    fed: list[bytes] = []
    own = OwnReply(read_fd, readable_waiter(read_fd), fed.append, lambda: False)
    assert own.sending({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}) == 1
    own.delivered({"jsonrpc": "2.0", "id": 1, "result": {}})  # read by the reader thread
    assert own.sending({"jsonrpc": "2.0", "id": 2, "method": "tools/call"}) == 2
    os.write(write_fd, b'{"jsonrpc": "2.0", "id": 2, "result": {}}\n')  # another caller's reply
    own.read_reply(1, Deadline(5))
    assert fed == []  # left in the pipe for the reader thread
    assert not own.baton.lock.locked()
    assert own.baton.kicks == 0  # nothing awaited by this caller: the reader is not hurried


def test_the_only_awaited_reply_is_read_by_its_caller(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    own = OwnReply(read_fd, readable_waiter(read_fd), lambda chunk: fed.append(chunk) or own.delivered({"id": 1}),
                   lambda: False)
    fed: list[bytes] = []
    own.sending({"jsonrpc": "2.0", "id": 1, "method": "tools/call"})
    os.write(write_fd, b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n')
    own.read_reply(1, Deadline(5))
    assert fed == [b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n']
    assert own.awaited == set() and not own.baton.lock.locked()


def test_a_kick_while_a_caller_reads_resumes_the_reader_when_it_lets_go() -> None:
    # A caller that finds the pipe claimed kicks the reader thread, which wakes nobody while the
    # claim lasts.  The claimer, which had seen no other reply awaited before the kicker
    # registered its own, used to park the reader for LINGER more: the kicker's reply waited.
    baton = ReadBaton()
    baton.LINGER = 30.0  # so that a lost kick shows as a reader still parked, not as a delay
    assert baton.claim()
    stop, resumed = threading.Event(), threading.Event()
    kicks = baton.kicks

    def reader() -> None:
        baton.park(stop.is_set, kicks)
        resumed.set()

    thread = threading.Thread(target=reader, name="test-reader")
    thread.start()
    try:
        end = time.monotonic() + 5
        while not baton._parked and time.monotonic() < end:
            time.sleep(0.005)
        assert baton._parked
        baton.kick()  # another caller waits the normal way: the pipe is claimed, so nobody is woken
        baton.release(False)  # the claimer saw nothing else awaited
        assert resumed.wait(2.0), "the kick was lost: the reader stays parked"
    finally:
        stop.set()
        thread.join(2.0)
    assert not thread.is_alive()


def test_a_reply_is_matched_to_its_wait_as_the_session_matches_it(pipe: tuple[int, int]) -> None:
    # A server's reply id that is a list (fuzzed output) raised TypeError here and killed the
    # reader thread; "2" for 2 settles request 2 in the session, and must end its wait here too.
    read_fd, _ = pipe
    own = OwnReply(read_fd, readable_waiter(read_fd), lambda chunk: None, lambda: False)
    own.sending({"jsonrpc": "2.0", "id": 1, "method": "tools/call"})
    own.sending({"jsonrpc": "2.0", "id": 2, "method": "tools/call"})
    own.delivered({"jsonrpc": "2.0", "id": [1], "result": {}})
    own.delivered({"jsonrpc": "2.0", "id": {"a": 1}, "error": {}})
    assert own.awaited == {1, 2}
    own.delivered({"jsonrpc": "2.0", "id": "2", "result": {}})
    assert own.awaited == {1}
