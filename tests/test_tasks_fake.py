"""Tasks with ``FakeServer`` (``@server.tool(task=...)``): what users test their own task code with.

In-process, 2026-07-28: the same client API as against fastmcp-tasks, so the behaviour must
match it (``tests/test_tasks_fastmcp.py``): optional and required task tools, input requests
answered through ``tasks/update``, cancel, failures, and tasks outliving the connection that
started them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
import pytest

import mcpsync
from mcpsync import types
from mcpsync.testing import FakeServer, RpcError, ToolContext

pytestmark = pytest.mark.timeout(30)

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def server(gate: threading.Event) -> Iterator[FakeServer]:
    server = FakeServer("reports", era="modern")

    @server.tool(task="optional")
    def build(year: int) -> str:
        """Waits for the test's gate, then reports."""
        assert gate.wait(20)
        return f"report {year}"

    @server.tool(task="required")
    def greet(ctx: ToolContext) -> str:
        answer = ctx.elicit("Your name?", NAME_SCHEMA)
        return f"Hello, {answer['content']['name']}!"

    @server.tool(task="optional")
    def stoppable(ctx: ToolContext) -> str:
        return "stopped" if ctx.cancelled.wait(20) else "ran out"

    @server.tool(task="optional")
    def broken() -> str:
        raise RpcError(-32000, "quota exceeded", {"retryAfter": 30})

    @server.tool()
    def plain() -> str:
        return "plain"

    yield server
    server.cancel_tasks()


def _answer(params: types.ElicitRequestFormParams) -> types.ElicitResult:
    return types.ElicitResult("accept", content={"name": "Ada"})


def test_optional_task(server: FakeServer, gate: threading.Event) -> None:
    with server.client() as client:
        assert client.server_extensions == {types.TASKS_EXTENSION_ID: {}}
        handle = client.start_tool_task("build", {"year": 2026})
        assert handle.task_id and handle.state is not None and handle.state.status == "working"
        assert client.task(handle.task_id).status().status == "working"
        gate.set()
        assert handle.wait(timeout=10).text == "report 2026"
        # Without the opt-in it is an ordinary call; a tool without task= never makes a task.
        assert client.call_tool("build", {"year": 1}).text == "report 1"
        inline = client.start_tool_task("plain")
        assert inline.task_id is None and inline.wait().text == "plain"


def test_required_task_and_input(server: FakeServer) -> None:
    calls: list[str] = []

    def answer(params: types.ElicitRequestFormParams) -> types.ElicitResult:
        calls.append(params.message)
        return _answer(params)

    with server.client(elicitation_handler=answer) as client:
        with pytest.raises(mcpsync.MissingClientCapability):
            client.call_tool("greet")
        assert client.start_tool_task("greet").wait(timeout=10).text == "Hello, Ada!"
    assert calls == ["Your name?"]


def test_cancel_reaches_the_tool(server: FakeServer) -> None:
    with server.client() as client:
        handle = client.start_tool_task("stoppable")
        handle.cancel()
        with pytest.raises(mcpsync.TaskCancelled):
            handle.wait(timeout=10)


def test_failed_task(server: FakeServer) -> None:
    with server.client() as client:
        with pytest.raises(mcpsync.TaskFailed) as info:
            client.start_tool_task("broken").wait(timeout=10)
    assert (info.value.code, info.value.message, info.value.data) == (-32000, "quota exceeded", {"retryAfter": 30})


def test_a_task_outlives_the_client_that_started_it(server: FakeServer, gate: threading.Event) -> None:
    """The Celery shape, in-process: one client submits and closes, another waits by id."""
    with server.client() as view:
        task_id = view.start_tool_task("build", {"year": 1999}).task_id
    assert task_id
    with server.client() as worker:
        gate.set()
        assert worker.task(task_id).wait(timeout=10).text == "report 1999"


def test_bad_task_requests(server: FakeServer) -> None:
    with server.client() as client:
        with pytest.raises(mcpsync.TaskNotFound):
            client.task("nope").status()
        task_id = client.start_tool_task("stoppable").task_id
        # A task request that does not declare the extension is refused (-32021).
        with pytest.raises(mcpsync.MissingClientCapability):
            client.request("tasks/get", {"taskId": task_id})
        client.task(task_id or "").cancel()


def test_input_wait_is_released_by_cancel_tasks(server: FakeServer) -> None:
    with server.client(elicitation_handler=_answer) as client:
        meta = client.extension_meta({types.TASKS_EXTENSION_ID: {}})
        raw = client.request("tools/call", {"name": "greet", "arguments": {}, "_meta": meta})
        assert raw["resultType"] == "task"
        # Nobody answers: the task waits for input until the server ends its tasks.
        assert client.task(raw["taskId"]).status().status in ("working", "input_required")
    server.cancel_tasks(timeout=5)
    assert not [t for t in threading.enumerate() if t.name.startswith("mcpsync-fakeserver-task")]


def test_handshake_era_fake_runs_task_tools_inline() -> None:
    server = FakeServer("old", era="legacy")

    @server.tool(task="required")
    def work() -> str:
        return "done"

    with server.client() as client:
        handle = client.start_tool_task("work")
        assert handle.task_id is None and handle.wait().text == "done"
        assert client.server_extensions == {}


def test_task_mode_is_checked() -> None:
    with pytest.raises(ValueError):
        FakeServer("x").tool(task="sometimes")
