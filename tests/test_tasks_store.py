"""The client's own task store (``serve_tasks=True``): what a misbehaving server could ask.

server-everything exercises the happy paths (``tests/test_tasks_everything.py``); these are
the cases it never produces: unknown ids, cancelling, expiry, the bound on tasks, and a
``tasks/result`` for a task whose handler is still running.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, Callable

import pytest

from mcpsync.client import task_store as _task_store
from mcpsync.client.task_store import ClientTaskStore
from mcpsync.exceptions import ServerError

pytestmark = pytest.mark.timeout(30)


class Workers:
    """Runs submitted jobs on threads, as the client's handler workers would."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        t = threading.Thread(target=fn, args=args)
        self.threads.append(t)
        t.start()
        return True

    def join(self) -> None:
        for t in self.threads:
            t.join(10)


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # never leave a handler blocked


@pytest.fixture
def store(gate: threading.Event) -> Iterator[ClientTaskStore]:
    workers = Workers()
    reported: list[BaseException] = []

    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert "task" not in params  # the task metadata is not the handler's business
        if params.get("fail"):
            raise ValueError("handler broke")
        if params.get("wait"):
            assert gate.wait(10)
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    s = ClientTaskStore(workers.submit, answer, reported.append)
    s.reported = reported  # type: ignore[attr-defined]
    yield s
    gate.set()
    workers.join()


def start(store: ClientTaskStore, **params: Any) -> str:
    created = store.answer("sampling/createMessage", {"task": {"ttl": 60_000}, "messages": [], **params})
    task_id = created["task"]["taskId"]
    assert created["task"]["status"] == "working"
    assert isinstance(task_id, str) and len(task_id) >= 16
    return str(task_id)


def test_only_task_requests_and_task_methods_go_to_the_store(store: ClientTaskStore) -> None:
    assert store.handles("sampling/createMessage", {"task": {}})
    assert store.handles("elicitation/create", {"task": {"ttl": 5}})
    assert not store.handles("sampling/createMessage", {})
    assert not store.handles("roots/list", {"task": {}})
    assert store.handles("tasks/get", {})


def test_result_waits_for_the_handler(store: ClientTaskStore, gate: threading.Event) -> None:
    task_id = start(store, wait=True)
    assert store.answer("tasks/get", {"taskId": task_id})["status"] == "working"
    got: list[dict[str, Any]] = []
    t = threading.Thread(target=lambda: got.append(store.answer("tasks/result", {"taskId": task_id})))
    t.start()
    gate.set()
    t.join(10)
    assert got and got[0]["model"] == "m"
    assert store.answer("tasks/get", {"taskId": task_id})["status"] == "completed"
    assert [task["taskId"] for task in store.answer("tasks/list", {})["tasks"]] == [task_id]


def test_failed_handler(store: ClientTaskStore) -> None:
    task_id = start(store, fail=True)
    with pytest.raises(ServerError) as info:
        store.answer("tasks/result", {"taskId": task_id})
    assert info.value.code == -32603
    assert "handler broke" not in info.value.message
    assert store.answer("tasks/get", {"taskId": task_id})["status"] == "failed"
    assert isinstance(store.reported[0], ValueError)  # type: ignore[attr-defined]


def test_cancel_ends_a_running_task(store: ClientTaskStore) -> None:
    task_id = start(store, wait=True)
    assert store.answer("tasks/cancel", {"taskId": task_id})["status"] == "cancelled"
    with pytest.raises(ServerError):
        store.answer("tasks/result", {"taskId": task_id})
    # Cancelling again, or the handler finishing later, changes nothing.
    assert store.answer("tasks/cancel", {"taskId": task_id})["status"] == "cancelled"


@pytest.mark.parametrize("task_id", ["nope", None, 5, ""])
def test_unknown_ids(store: ClientTaskStore, task_id: Any) -> None:
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        with pytest.raises(ServerError) as info:
            store.answer(method, {"taskId": task_id})
        assert info.value.code == -32602


def test_expired_tasks_are_forgotten(store: ClientTaskStore, monkeypatch: pytest.MonkeyPatch) -> None:
    task_id = start(store)
    clock = _task_store.time.monotonic() + 3600
    monkeypatch.setattr(_task_store.time, "monotonic", lambda: clock)
    with pytest.raises(ServerError):
        store.answer("tasks/get", {"taskId": task_id})
    assert store.answer("tasks/list", {}) == {"tasks": []}


def test_bounded_number_of_tasks(store: ClientTaskStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_task_store, "MAX_TASKS", 3)
    for _ in range(3):
        start(store)
    with pytest.raises(ServerError):
        start(store)


def test_bad_ttl_gets_the_default(store: ClientTaskStore) -> None:
    for ttl in (None, -1, "x", True, 10**12):
        created = store.answer("sampling/createMessage", {"task": {"ttl": ttl}, "messages": []})
        assert 0 < created["task"]["ttl"] <= _task_store.MAX_TTL_MS
