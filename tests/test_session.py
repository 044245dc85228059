"""Unit tests of the I/O-free JSON-RPC engine: no threads, no transport."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcpsync.exceptions import (
    ConnectionClosed,
    InvalidParams,
    MethodNotFound,
    ProtocolError,
    RequestCancelled,
    RequestTimeout,
    ServerError,
)
from mcpsync.rpc import deadline as deadline_module
from mcpsync.rpc.deadline import Deadline
from mcpsync.rpc.session import PendingRequest, Session, normalize_id


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Wire:
    """Collects what the session sends and what it hands up."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.notifications: list[tuple[str, dict[str, Any]]] = []
        self.requests: list[tuple[Any, str, dict[str, Any]]] = []
        self.progress: list[dict[str, Any]] = []
        self.fail_with: BaseException | None = None

    def send(self, message: Any, deadline: Any = None) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        self.sent.append(dict(message))


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(deadline_module, "now", fake)
    return fake


def send(session: Session, method: str, params: Any = None, timeout: float | None = None, **options: Any,
         ) -> PendingRequest:
    """``session.request`` with a deadline of *timeout* seconds (``None``: none)."""
    return session.request(method, params, Deadline(timeout, options.pop("max_total", None),
                                                      reset_on_progress=options.pop("reset", True)), **options)


def now() -> Deadline:
    """A deadline already passed: ``wait`` returns only what is settled."""
    return Deadline(0)


@pytest.fixture
def session(wire: Wire, clock: FakeClock) -> Session:
    return Session(
        wire.send,
        on_notification=lambda m, p: wire.notifications.append((m, p)),
        on_request=lambda i, m, p: wire.requests.append((i, m, p)),
        on_progress=lambda pending, p: wire.progress.append(p),
    )


def reply(request_id: Any, result: Any = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if result is not None:
        message["result"] = result
    message.update(extra)
    return message


def test_ids_are_unique_increasing_integers(session: Session, wire: Wire) -> None:
    for _ in range(5):
        send(session, "ping")
    ids = [m["id"] for m in wire.sent]
    assert ids == sorted(set(ids)) and all(type(i) is int for i in ids)


def test_request_is_registered_before_it_is_sent(wire: Wire) -> None:
    seen_pending: list[int] = []
    holder: dict[str, Session] = {}

    def transport_send(message: Any, deadline: Any) -> None:
        seen_pending.append(holder["s"].pending_count())
        # A reply delivered synchronously from inside send must still match.
        holder["s"].feed(reply(message["id"], {"ok": True}))

    holder["s"] = session = Session(transport_send)
    pending = send(session, "tools/list")
    assert seen_pending == [1]
    assert session.wait(pending, now()) == {"ok": True}


def test_response_settles_future(session: Session, wire: Wire) -> None:
    pending = send(session, "tools/list", {"cursor": "x"})
    assert wire.sent[0] == {"jsonrpc": "2.0", "id": pending.id, "method": "tools/list", "params": {"cursor": "x"}}
    session.feed(reply(pending.id, {"tools": []}))
    assert session.wait(pending, now()) == {"tools": []}
    assert session.pending_count() == 0


@pytest.mark.parametrize(
    ("error", "cls"),
    [
        ({"code": -32601, "message": "nope"}, MethodNotFound),
        ({"code": -32602, "message": "bad", "data": {"x": 1}}, InvalidParams),
        ({"code": 12345, "message": "custom"}, ServerError),
    ],
)
def test_error_response_maps_to_class(session: Session, error: dict[str, Any], cls: type) -> None:
    pending = send(session, "x")
    session.feed(reply(pending.id, error=error))
    with pytest.raises(cls) as info:
        session.wait(pending, now())
    assert type(info.value) is cls
    assert info.value.code == error["code"]
    assert info.value.message == error["message"]
    assert info.value.data == error.get("data")


@pytest.mark.parametrize(
    "bad",
    [
        {"error": {"code": -32000, "message": None}},
        {"error": "boom"},
        {"error": {"code": "-32000", "message": "x"}},
        {"error": {"code": True, "message": "x"}},
        {"result": {}, "error": {"code": 1, "message": "x"}},
        {},
        {"result": "not an object"},
        {"result": {}, "jsonrpc": "1.0"},
    ],
)
def test_malformed_response_fails_only_that_call(session: Session, bad: dict[str, Any]) -> None:
    first = send(session, "a")
    second = send(session, "b")
    session.feed({"jsonrpc": "2.0", "id": first.id, **bad})
    with pytest.raises(ProtocolError):
        session.wait(first, now())
    session.feed(reply(second.id, {"fine": 1}))
    assert session.wait(second, now()) == {"fine": 1}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(7, 7), ("7", 7), (True, None), (False, None), (1.0, None), (None, None), ("abc", "abc"), ([1], None)],
)
def test_normalize_id(raw: Any, expected: Any) -> None:
    assert normalize_id(raw) == expected


def test_string_id_matches_integer_request(session: Session) -> None:
    pending = send(session, "x")
    session.feed(reply(str(pending.id), {"v": 1}))
    assert session.wait(pending, now()) == {"v": 1}


def test_bool_null_float_unknown_and_duplicate_ids_are_dropped(session: Session) -> None:
    pending = send(session, "x")
    assert pending.id == 1
    for bad_id in (True, None, 1.0, 999, "zzz"):
        session.feed(reply(bad_id, {"wrong": True}))
    assert not pending.reply.done()
    session.feed(reply(1, {"right": True}))
    session.feed(reply(1, {"duplicate": True}))
    assert session.wait(pending, now()) == {"right": True}
    assert session.dropped_responses == 6


def test_timeout_pops_sends_cancel_and_drops_late_reply(
    session: Session, wire: Wire, clock: FakeClock
) -> None:
    pending = send(session, "tools/call", {"name": "slow"}, timeout=30)
    clock.now += 31
    with pytest.raises(RequestTimeout) as info:
        session.wait(pending)
    assert isinstance(info.value, TimeoutError)
    assert info.value.method == "tools/call"
    cancel = wire.sent[-1]
    assert cancel["method"] == "notifications/cancelled"
    assert cancel["params"]["requestId"] == pending.id
    session.feed(reply(pending.id, {"late": True}))
    assert session.dropped_responses == 1


def test_initialize_is_never_cancelled(session: Session, wire: Wire, clock: FakeClock) -> None:
    pending = send(session, "initialize", {}, timeout=1)
    clock.now += 5
    with pytest.raises(RequestTimeout):
        session.wait(pending)
    assert [m.get("method") for m in wire.sent] == ["initialize"]


def test_progress_resets_idle_timeout_but_not_max_total(
    session: Session, wire: Wire, clock: FakeClock
) -> None:
    pending = send(session, "tools/call", {}, timeout=10, progress=lambda *a: None)
    token = wire.sent[0]["params"]["_meta"]["progressToken"]
    clock.now += 8
    session.feed({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1}})
    assert wire.progress and wire.notifications[-1][0] == "notifications/progress"
    clock.now += 8  # 16 s since start, 8 s since progress: idle window of 10 s not exceeded
    assert pending.deadline.end == 118 and not pending.deadline.passed()
    clock.now += 5  # 13 s since last progress
    with pytest.raises(RequestTimeout):
        session.wait(pending)

    second = send(session, "tools/call", {}, timeout=10, max_total=10, progress=lambda *a: None)
    clock.now += 9
    session.feed({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": second.id, "progress": 1}})
    clock.now += 2  # idle 2 s, total 11 s > max_total 10
    with pytest.raises(RequestTimeout, match="max total"):
        session.wait(second)


def test_without_reset_progress_does_not_extend(session: Session, clock: FakeClock) -> None:
    pending = send(session, "tools/call", {}, timeout=10, reset=False, progress=lambda *a: None)
    clock.now += 8
    session.feed({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": pending.id, "progress": 1}})
    clock.now += 3
    with pytest.raises(RequestTimeout):
        session.wait(pending)


def test_cancel_settles_once_and_notifies(session: Session, wire: Wire) -> None:
    pending = send(session, "tools/call")
    assert session.cancel(pending, "user abort") is True
    assert session.cancel(pending) is False
    with pytest.raises(RequestCancelled):
        session.wait(pending, now())
    assert wire.sent[-1] == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": pending.id, "reason": "user abort"},
    }
    session.feed(reply(pending.id, {"late": True}))  # dropped, no exception


def test_reply_wins_race_against_cancel(session: Session, wire: Wire) -> None:
    pending = send(session, "x")
    session.feed(reply(pending.id, {"v": 1}))
    assert session.cancel(pending) is False
    assert session.wait(pending, now()) == {"v": 1}
    assert all(m.get("method") != "notifications/cancelled" for m in wire.sent)


def test_fail_all_fails_every_pending_and_later_sends(session: Session) -> None:
    calls = [send(session, "x") for _ in range(20)]
    closed = ConnectionClosed("server exited", exit_code=3, stderr_tail="boom")
    session.fail_all(closed)
    for call in calls:
        with pytest.raises(ConnectionClosed) as info:
            session.wait(call, now())
        assert info.value.exit_code == 3 and info.value.stderr_tail == "boom"
    with pytest.raises(ConnectionClosed):
        send(session, "y")
    session.fail_all(ConnectionClosed("second reason"))  # first reason wins
    assert session.closed is closed


def test_send_failure_unregisters_and_raises(session: Session, wire: Wire) -> None:
    wire.fail_with = ConnectionClosed("pipe broke")
    with pytest.raises(ConnectionClosed):
        send(session, "x")
    assert session.pending_count() == 0


def test_server_ping_is_answered_and_requests_forwarded(session: Session, wire: Wire) -> None:
    session.feed({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
    assert wire.sent[-1] == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}
    session.feed({"jsonrpc": "2.0", "id": 5, "method": "roots/list"})
    assert wire.requests == [(5, "roots/list", {})]
    session.feed({"jsonrpc": "2.0", "id": 6, "method": "sampling/createMessage", "params": [1]})
    assert wire.sent[-1]["error"]["code"] == -32602


def test_request_without_handler_gets_method_not_found(wire: Wire) -> None:
    session = Session(wire.send)
    session.feed({"jsonrpc": "2.0", "id": 1, "method": "roots/list"})
    assert wire.sent[-1]["error"]["code"] == -32601


def test_notifications_in_order_and_junk_ignored(
    session: Session, wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    for message in (
        "text",
        42,
        None,
        {"jsonrpc": "2.0"},
        {"jsonrpc": "2.0", "method": 5},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": "x"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
    ):
        session.feed(message)
    assert session.invalid_messages == 7
    session.feed({"jsonrpc": "2.0", "method": "a"})
    session.feed({"jsonrpc": "2.0", "method": "b", "params": {"k": 1}})
    assert wire.notifications == [("a", {}), ("b", {"k": 1})]


def test_batch_replies_are_unpacked(session: Session) -> None:
    one, two = send(session, "a"), send(session, "b")
    session.feed([reply(two.id, {"n": 2}), reply(one.id, {"n": 1})])
    assert session.wait(one, now()) == {"n": 1}
    assert session.wait(two, now()) == {"n": 2}


def test_progress_for_finished_request_is_ignored(session: Session, wire: Wire) -> None:
    pending = send(session, "x", progress=lambda *a: None)
    session.feed(reply(pending.id, {}))
    session.feed({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": pending.id, "progress": 2}})
    assert wire.progress == []
    assert wire.notifications[-1][0] == "notifications/progress"
