"""The stdio fast path of a caller reading its own reply (mcpsync/transports/stdio/caller_read.py).

Unit-level, over a real pipe: which thread reads is not observable through the public API
without timing, and the bench (bench/, "8 threads, one client") measures what it costs.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator

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


class _Polls:
    """A ``ready`` that records each timeout asked for; ``slow``: nothing is ready at once."""

    def __init__(self, fd: int, *, slow: bool) -> None:
        self._real, self.slow = readable_waiter(fd), slow
        self.timeouts: list[float] = []

    def __call__(self, timeout: float) -> bool:
        self.timeouts.append(timeout)
        return False if self.slow and timeout == 0 else self._real(timeout)


def _reading_caller(read_fd: int, write_fd: int, polls: _Polls) -> Callable[[int], bool]:
    """``call(n)``: request *n* answered (the reply already in the pipe), read by its caller;
    whether that read spun (polled with no timeout)."""
    own: OwnReply

    def feed(chunk: bytes) -> None:
        for line in chunk.splitlines():
            own.delivered(json.loads(line))

    own = OwnReply(read_fd, polls, feed, lambda: False)

    def call(n: int) -> bool:
        own.sending({"jsonrpc": "2.0", "id": n, "method": "tools/call"})
        os.write(write_fd, b'{"jsonrpc": "2.0", "id": %d, "result": {}}\n' % n)
        del polls.timeouts[:]
        own.read_reply(n, Deadline(5))
        assert n not in own.awaited  # read, by the caller
        return 0 in polls.timeouts

    return call


@pytest.fixture
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)


@pytest.mark.usefixtures("two_cpus")
def test_a_reply_ready_within_the_spin_is_read_without_sleeping(pipe: tuple[int, int]) -> None:
    polls = _Polls(pipe[0], slow=False)
    call = _reading_caller(*pipe, polls)
    for n in range(1, 4):
        assert call(n)
        assert polls.timeouts == [0]  # one poll that did not sleep, and no wait with a timeout


@pytest.mark.usefixtures("two_cpus")
def test_a_spin_that_misses_turns_spinning_off_for_more_reads_each_time(pipe: tuple[int, int]) -> None:
    # A slower server: every spin misses, so spinning would only burn CPU.  After each miss the
    # next 1, 2, 4, ... reads sleep at once; a hit starts again from one.
    polls = _Polls(pipe[0], slow=True)
    call = _reading_caller(*pipe, polls)
    spun = [call(n) for n in range(1, 16)]
    assert spun == [True, False, True, False, False, True, False, False, False, False, True,
                    False, False, False, False]
    assert polls.timeouts and all(t > 0 for t in polls.timeouts)  # a read that skips the spin sleeps at once
    polls.slow = False
    spun = [call(n) for n in range(16, 22)]
    assert spun == [False, False, False, False, True, True]  # the rest of the skip, then a hit: spin again


def test_a_process_on_one_cpu_never_spins(pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    # The server needs the CPU the caller would spin on.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    polls = _Polls(pipe[0], slow=False)
    call = _reading_caller(*pipe, polls)
    assert [call(n) for n in range(1, 4)] == [False, False, False]
    assert all(t > 0 for t in polls.timeouts)


@pytest.mark.usefixtures("two_cpus")
def test_threads_sharing_the_connection_turn_the_spin_off(pipe: tuple[int, int]) -> None:
    # A spin holds the GIL between its polls, which threads sharing the connection need
    # between their calls: a caller that finds another reply awaited turns spinning off.
    polls = _Polls(pipe[0], slow=False)
    own = OwnReply(pipe[0], polls, lambda chunk: own.delivered(json.loads(chunk)), lambda: False)
    own.sending({"jsonrpc": "2.0", "id": 1, "method": "tools/call"})
    own.sending({"jsonrpc": "2.0", "id": 2, "method": "tools/call"})
    own.read_reply(2, Deadline(5))  # two awaited: the reader thread reads, and nobody polls
    assert polls.timeouts == []
    call = _reading_caller(*pipe, polls)
    assert call(3)  # another connection's caller still spins
    own.awaited.clear()
    own.sending({"jsonrpc": "2.0", "id": 4, "method": "tools/call"})
    os.write(pipe[1], b'{"jsonrpc": "2.0", "id": 4, "result": {}}\n')
    del polls.timeouts[:]
    own.read_reply(4, Deadline(5))
    assert 0 not in polls.timeouts  # alone again, yet no spin for a while
