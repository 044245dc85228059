"""The in-process memory transport: ordering, copying, threads, closing."""

from __future__ import annotations

import queue
import threading
from typing import Any

import pytest

from mcpsync.exceptions import ClientClosed, ConnectionClosed
from mcpsync.transports.base import Transport
from mcpsync.transports.memory import MemoryTransport, create_pair

pytestmark = pytest.mark.timeout(30)


class Recorder:
    """Collects what one end delivers, and on which thread."""

    def __init__(self) -> None:
        self.messages: queue.Queue[Any] = queue.Queue()
        self.threads: set[str] = set()
        self.closed: queue.Queue[BaseException] = queue.Queue()

    def on_message(self, message: Any) -> None:
        self.threads.add(threading.current_thread().name)
        self.messages.put(message)

    def on_close(self, exc: BaseException) -> None:
        self.threads.add(threading.current_thread().name)
        self.closed.put(exc)

    def take(self, n: int) -> list[Any]:
        return [self.messages.get(timeout=5) for _ in range(n)]


def started_pair() -> tuple[MemoryTransport, MemoryTransport, Recorder, Recorder]:
    a, b = create_pair()
    ra, rb = Recorder(), Recorder()
    a.start(ra.on_message, ra.on_close)
    b.start(rb.on_message, rb.on_close)
    return a, b, ra, rb


def test_is_a_transport() -> None:
    a, b = create_pair()
    assert isinstance(a, Transport) and isinstance(b, Transport)
    assert "memory" in a.describe()
    a.close()


def test_messages_arrive_in_order_on_the_receivers_named_thread() -> None:
    a, b, ra, rb = started_pair()
    try:
        for i in range(500):
            a.send({"jsonrpc": "2.0", "method": "n", "params": {"i": i}})
        assert [m["params"]["i"] for m in rb.take(500)] == list(range(500))
        b.send({"back": True})
        assert ra.take(1) == [{"back": True}]
        me = threading.current_thread().name
        assert me not in rb.threads and me not in ra.threads
        assert len(rb.threads) == 1 and next(iter(rb.threads)).startswith("mcpsync-memory-")
        assert rb.threads != ra.threads  # each end has its own delivery thread
    finally:
        a.close()


def test_messages_cross_as_json_not_by_reference() -> None:
    a, b, ra, rb = started_pair()
    try:
        payload: dict[str, Any] = {"list": [1, 2], "tuple": (3, 4), "nested": {"k": "v"}}
        a.send(payload)
        payload["list"].append(99)
        payload["nested"]["k"] = "changed"
        (got,) = rb.take(1)
        assert got == {"list": [1, 2], "tuple": [3, 4], "nested": {"k": "v"}}
        assert got is not payload
    finally:
        a.close()


@pytest.mark.parametrize(
    "bad, error",
    [
        ({"x": float("nan")}, ValueError),
        ({"x": float("inf")}, ValueError),
        ({"x": "\ud800"}, ValueError),
        ({"x": object()}, TypeError),
        ({"x": {1, 2}}, TypeError),
    ],
)
def test_bad_input_raises_in_the_sender_and_nothing_is_delivered(
    bad: dict[str, Any], error: type
) -> None:
    a, b, ra, rb = started_pair()
    try:
        with pytest.raises(error):
            a.send(bad)
        a.send({"good": 1})
        assert rb.take(1) == [{"good": 1}]  # the bad message never got in front of it
        assert rb.messages.empty()
    finally:
        a.close()


@pytest.mark.parametrize("closer", ["a", "b"])
def test_close_closes_both_ends_with_the_right_reasons(closer: str) -> None:
    a, b, ra, rb = started_pair()
    ends = {"a": (a, ra), "b": (b, rb)}
    me, my_rec = ends[closer]
    other, other_rec = ends["b" if closer == "a" else "a"]
    me.close()
    mine = my_rec.closed.get(timeout=5)
    theirs = other_rec.closed.get(timeout=5)
    assert isinstance(mine, ClientClosed)
    assert isinstance(theirs, ConnectionClosed) and not isinstance(theirs, ClientClosed)
    assert a.closed and b.closed
    for end in (a, b):
        with pytest.raises(ConnectionClosed):
            end.send({"after": "close"})
    # Idempotent, from either side, and on_close ran exactly once per end.
    a.close()
    b.close()
    assert my_rec.closed.empty() and other_rec.closed.empty()


def test_peer_receives_everything_sent_before_the_close_then_eof() -> None:
    a, b = create_pair()
    rb = Recorder()
    for i in range(50):
        a.send({"i": i})
    a.close()  # before b even started: the messages are still queued for it
    b.start(rb.on_message, rb.on_close)
    assert [m["i"] for m in rb.take(50)] == list(range(50))
    assert isinstance(rb.closed.get(timeout=5), ConnectionClosed)


def test_closer_drops_what_was_still_queued_for_it() -> None:
    a, b = create_pair()
    ra = Recorder()
    b.send({"unwanted": True})
    a.close()
    a.start(ra.on_message, ra.on_close)
    assert isinstance(ra.closed.get(timeout=5), ClientClosed)
    assert ra.messages.empty()


def test_close_joins_the_delivery_threads() -> None:
    before = {t.name for t in threading.enumerate()}
    a, b, ra, rb = started_pair()
    a.send({"x": 1})
    rb.take(1)
    a.close()
    leftover = [
        t
        for t in threading.enumerate()
        if t.name.startswith("mcpsync-memory-") and t.name not in before
    ]
    assert leftover == []


def test_a_raising_callback_does_not_stop_delivery() -> None:
    a, b = create_pair()
    got: queue.Queue[Any] = queue.Queue()

    def on_message(message: Any) -> None:
        if message.get("boom"):
            raise RuntimeError("callback bug")
        got.put(message)

    b.start(on_message, lambda exc: None)
    a.start(lambda m: None, lambda exc: None)
    try:
        a.send({"boom": True})
        a.send({"ok": True})
        assert got.get(timeout=5) == {"ok": True}
    finally:
        a.close()


def test_close_from_inside_a_callback_does_not_deadlock() -> None:
    a, b = create_pair()
    closed = Recorder()

    def on_message(message: Any) -> None:
        b.close()  # runs on b's own delivery thread

    b.start(on_message, closed.on_close)
    a.start(lambda m: None, lambda exc: None)
    a.send({"please": "close"})
    assert isinstance(closed.closed.get(timeout=5), ClientClosed)
    a.close()


def test_start_twice_is_an_error() -> None:
    a, b = create_pair()
    a.start(lambda m: None, lambda exc: None)
    try:
        with pytest.raises(RuntimeError):
            a.start(lambda m: None, lambda exc: None)
    finally:
        a.close()


def test_concurrent_senders_never_interleave_or_lose_messages() -> None:
    a, b, ra, rb = started_pair()
    try:

        def send_many(tag: int) -> None:
            for i in range(200):
                a.send({"tag": tag, "i": i, "pad": "x" * 1000})

        threads = [threading.Thread(target=send_many, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        got = rb.take(1600)
        for tag in range(8):
            assert [m["i"] for m in got if m["tag"] == tag] == list(range(200))
    finally:
        a.close()
