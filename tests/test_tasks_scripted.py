"""Tasks against a scripted 2026-07-28 server: the wire rules, and what no real server sends.

fastmcp-tasks covers the behaviour end to end (``tests/test_tasks_fastmcp.py``); these pin
down the client's side exactly (the per-request opt-in on every ``tasks/*`` request, one
``tasks/update`` per input key however often a poll repeats it) and its answer to malformed
or stalling servers: a typed error within the caller's timeout, never a hang.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from test_modern import ScriptedServer, listen_handler, notify

import mcpsync
from mcpsync import types

CAPS = "io.modelcontextprotocol/clientCapabilities"
TASKS = types.TASKS_EXTENSION_ID

pytestmark = pytest.mark.timeout(30)


def task(status: str, task_id: str = "t-1", **fields: Any) -> dict[str, Any]:
    return {
        "resultType": "complete",
        "taskId": task_id,
        "status": status,
        "createdAt": "2026-11-24T10:00:00Z",
        "lastUpdatedAt": "2026-11-24T10:00:00Z",
        "ttlMs": 60_000,
        "pollIntervalMs": 50,
        **fields,
    }


DONE = {"content": [{"type": "text", "text": "done"}]}


def created(message: dict[str, Any]) -> dict[str, Any]:
    """A task for a request that declared the extension, else the result at once (as the spec says)."""
    extensions = message["params"]["_meta"][CAPS].get("extensions") or {}
    if TASKS not in extensions:
        return {"resultType": "complete", **DONE}
    return {**task("working"), "resultType": "task"}


class Server(ScriptedServer):
    def __init__(self, handlers: dict[str, Any]) -> None:
        super().__init__({"tools/call": created, **handlers})
        discover = self.handlers["server/discover"]

        def with_tasks(message: dict[str, Any]) -> dict[str, Any]:
            result = discover(message)
            result["capabilities"]["extensions"] = {TASKS: {}}
            return dict(result)

        self.handlers["server/discover"] = with_tasks


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    made: list[Server] = []
    yield made
    for server in made:
        server.close()


def serve(servers: list[Server], **handlers: Any) -> Server:
    server = Server({method.replace("_", "/"): handler for method, handler in handlers.items()})
    servers.append(server)
    return server


def test_every_task_request_declares_the_extension(servers: list[Server]) -> None:
    polls = itertools.count()
    server = serve(
        servers,
        tasks_get=lambda m: task("working") if next(polls) < 2 else task("completed", result=DONE),
        tasks_cancel=lambda m: {"resultType": "complete"},
    )
    with server.client(sampling_handler=lambda p: None) as client:
        assert client.call_tool("t").text == "done"  # a plain call: no opt-in, no task
        handle = client.start_tool_task("t")
        assert handle.wait(timeout=10).text == "done"
        handle.cancel()
    plain, started = server.requests("tools/call")
    assert TASKS not in (plain["params"]["_meta"][CAPS].get("extensions") or {})
    assert started["params"]["_meta"][CAPS]["extensions"] == {TASKS: {}}
    assert "sampling" in started["params"]["_meta"][CAPS]  # the client's own capabilities stay
    for message in server.requests("tasks/get") + server.requests("tasks/cancel"):
        assert message["params"]["taskId"] == "t-1"
        assert message["params"]["_meta"][CAPS]["extensions"] == {TASKS: {}}


def test_each_input_request_is_answered_once(servers: list[Server]) -> None:
    asked = {"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {"type": "object"}}}
    updated = threading.Event()
    polls = itertools.count()

    def get(message: dict[str, Any]) -> dict[str, Any]:
        n = next(polls)
        if not updated.is_set() or n < 4:  # the server is slow to notice the answer
            return task("input_required", inputRequests={"k1": asked})
        return task("completed", result=DONE)

    def update(message: dict[str, Any]) -> dict[str, Any]:
        updated.set()
        return {"resultType": "complete"}

    server = serve(servers, tasks_get=get, tasks_update=update)
    calls: list[str] = []

    def elicit(params: types.ElicitRequestFormParams) -> types.ElicitResult:
        calls.append(params.message)
        return types.ElicitResult("accept", content={"name": "Ada"})

    with server.client(elicitation_handler=elicit) as client:
        assert client.start_tool_task("t").wait(timeout=10).text == "done"
    assert calls == ["name?"]
    (update_msg,) = server.requests("tasks/update")
    assert update_msg["params"]["inputResponses"] == {"k1": {"action": "accept", "content": {"name": "Ada"}}}
    assert update_msg["params"]["taskId"] == "t-1"


def test_input_request_without_a_handler(servers: list[Server]) -> None:
    asked = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
    server = serve(servers, tasks_get=lambda m: task("input_required", inputRequests={"k": asked}))
    with server.client() as client:
        with pytest.raises(mcpsync.ProtocolError, match="sampling/createMessage"):
            client.start_tool_task("t").wait(timeout=10)
    assert not server.requests("tasks/update")


@pytest.mark.parametrize(
    "reply, error, text",
    [
        (task("exploded"), mcpsync.ProtocolError, "unknown status"),
        (task("working", task_id="someone-else"), mcpsync.ProtocolError, "another task"),
        (task("completed"), mcpsync.ProtocolError, "without a result"),
        ({"resultType": "complete", "status": "working"}, mcpsync.ProtocolError, "DetailedTask"),
        (task("failed", error={"code": "x"}, statusMessage="broke"), mcpsync.TaskFailed, "broke"),
        (task("failed", error={"code": -32000, "message": "quota", "data": {"n": 1}}), mcpsync.TaskFailed, "quota"),
        (task("cancelled", statusMessage="by admin"), mcpsync.TaskCancelled, "by admin"),
        ({"code": -32602, "message": "Task not found"}, mcpsync.TaskNotFound, "not found"),
        ({"code": -32603, "message": "db down"}, mcpsync.InternalError, "db down"),
    ],
)
def test_bad_or_final_replies(servers: list[Server], reply: dict[str, Any], error: type[Exception], text: str) -> None:
    server = serve(servers, tasks_get=lambda m: reply)
    with server.client() as client:
        started = time.monotonic()
        with pytest.raises(error, match=text) as info:
            client.task("t-1").wait(timeout=10)
        assert time.monotonic() - started < 5
    if isinstance(info.value, mcpsync.TaskFailed) and reply["error"].get("data"):
        assert info.value.data == {"n": 1} and info.value.code == -32000


def test_task_result_without_a_task_id(servers: list[Server]) -> None:
    server = serve(servers, tools_call=lambda m: {"resultType": "task", "status": "working"})
    with server.client() as client:
        with pytest.raises(mcpsync.ProtocolError):
            client.start_tool_task("t")


def test_a_server_that_never_answers_is_bounded(servers: list[Server]) -> None:
    server = serve(servers, tasks_get=lambda m: None)  # never replies
    with server.client() as client:
        started = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            client.task("t-1").wait(timeout=0.5)
        assert time.monotonic() - started < 2.0


def test_a_huge_poll_interval_is_bounded_by_the_timeout(servers: list[Server]) -> None:
    server = serve(servers, tasks_get=lambda m: task("working", pollIntervalMs=10**9))
    with server.client() as client:
        started = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            client.task("t-1").wait(timeout=0.5)
        assert time.monotonic() - started < 2.0
        assert len(server.requests("tasks/get")) == 1


def test_a_zero_poll_interval_does_not_spin(servers: list[Server]) -> None:
    server = serve(servers, tasks_get=lambda m: task("working", pollIntervalMs=0))
    with server.client() as client:
        with pytest.raises(mcpsync.RequestTimeout):
            client.task("t-1").wait(timeout=0.5)
    assert len(server.requests("tasks/get")) <= 0.5 / 0.05 + 2


def test_task_answering_another_method_is_a_protocol_error(servers: list[Server]) -> None:
    server = serve(servers, prompts_get=lambda m: {**task("working"), "resultType": "task"})
    with server.client() as client:
        with pytest.raises(mcpsync.ProtocolError, match="resultType"):
            client.get_prompt("p")


def test_list_tasks_is_not_in_the_extension(servers: list[Server]) -> None:
    with serve(servers).client() as client:
        with pytest.raises(mcpsync.CapabilityNotSupported):
            client.list_tasks()


def test_status_notifications_wake_the_wait(servers: list[Server]) -> None:
    finished = threading.Event()
    polls = itertools.count()
    ref: list[Server] = []
    server = serve(
        servers,
        # A minute between polls: only a pushed notification can end this wait in time.
        # The first two polls (before the stream, and once after it) always see it working.
        tasks_get=lambda m: (
            task("completed", result=DONE)
            if next(polls) >= 2 and finished.is_set()
            else task("working", pollIntervalMs=60_000)
        ),
        subscriptions_listen=listen_handler(ref),  # type: ignore[arg-type]
    )
    ref.append(server)
    with server.client() as client:
        handle = client.task("t-1")
        out: list[str] = []
        waiter = threading.Thread(target=lambda: out.append(handle.wait(timeout=20).text))
        waiter.start()
        (listen,) = server.wait_for("subscriptions/listen")
        assert listen["params"]["notifications"] == {"taskIds": ["t-1"]}
        assert listen["params"]["_meta"][CAPS]["extensions"] == {TASKS: {}}
        server.wait_for("tasks/get", count=2)  # before the stream, and once more after it
        finished.set()
        started = time.monotonic()
        notify(server, "notifications/tasks", listen["id"], **task("completed", result=DONE))
        waiter.join(10)
        assert out == ["done"]
        assert time.monotonic() - started < 5
        # The stream is closed when the wait ends.
        assert server.wait_for("notifications/cancelled")[-1]["params"]["requestId"] == listen["id"]


def test_a_stream_that_does_not_cover_the_task_is_dropped(servers: list[Server]) -> None:
    polls = itertools.count()

    def listen(message: dict[str, Any]) -> None:
        notify(server, "notifications/subscriptions/acknowledged", message["id"], notifications={})
        return None

    server = serve(
        servers,
        tasks_get=lambda m: task("working") if next(polls) < 2 else task("completed", result=DONE),
        subscriptions_listen=listen,
    )
    with server.client() as client:
        assert client.task("t-1").wait(timeout=10).text == "done"
        (listen_msg,) = server.requests("subscriptions/listen")
        assert server.wait_for("notifications/cancelled")[-1]["params"]["requestId"] == listen_msg["id"]


def test_input_required_before_the_task_is_created(servers: list[Server]) -> None:
    """MRTR first (the server asks, then decides to make a task), as the spec recommends."""
    asked = {"method": "elicitation/create", "params": {"message": "sure?", "requestedSchema": {"type": "object"}}}

    def call(message: dict[str, Any]) -> dict[str, Any]:
        if "inputResponses" not in message["params"]:
            return {"resultType": "input_required", "inputRequests": {"ok": asked}, "requestState": "s1"}
        return {**task("working"), "resultType": "task"}

    server = serve(servers, tools_call=call, tasks_get=lambda m: task("completed", result=DONE))
    with server.client(elicitation_handler=lambda p: types.ElicitResult("accept", content={})) as client:
        handle = client.start_tool_task("t")
        assert handle.task_id == "t-1"
        assert handle.wait(timeout=10).text == "done"
    first, second = server.requests("tools/call")
    assert second["params"]["requestState"] == "s1"
    assert second["params"]["inputResponses"] == {"ok": {"action": "accept", "content": {}}}
    assert second["params"]["_meta"][CAPS]["extensions"] == {TASKS: {}}


def test_task_requests_are_routed_by_task_id_over_http() -> None:
    from mcpsync.transports.http.headers import routing_headers

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        headers = routing_headers({"method": method, "params": {"taskId": "t-9", "_meta": meta}})
        assert headers["Mcp-Name"] == "t-9" and headers["Mcp-Method"] == method


def test_task_ids_stay_out_of_messages(servers: list[Server]) -> None:
    """A task id may be a bearer credential (SEP-2663): messages show a prefix only."""
    secret = "k7Qm2vXr9TzLw4NpB8sY"
    server = serve(servers, tasks_get=lambda m: {"code": -32602, "message": "Task not found"})
    with server.client() as client:
        handle = client.task(secret)
        with pytest.raises(mcpsync.TaskNotFound) as info:
            handle.status()
    assert info.value.task_id == secret
    assert secret not in str(info.value) and secret not in repr(handle)
    assert secret[:6] in str(info.value)
