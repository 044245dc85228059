"""Tasks in the 2025-11-25 core form against server-everything (``simulate-research-query``).

server-everything declares ``tasks.requests.tools.call``, ``tasks.list`` and ``tasks.cancel``;
its research tool requires a task and, when ``ambiguous``, asks for an elicitation while the
client waits on ``tasks/result``: the client's ordinary ``elicitation_handler`` answers it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import mcpsync
from mcpsync import types

RESEARCH = "simulate-research-query"

pytestmark = pytest.mark.timeout(90)


def _clarify(params: types.ElicitRequestFormParams) -> types.ElicitResult:
    assert "python" in params.message
    return types.ElicitResult("accept", content={"interpretation": "programming"})


@pytest.fixture
def client(everything_server: list[str]) -> Iterator[mcpsync.Client]:
    with mcpsync.Client.stdio(everything_server, timeout=30.0, elicitation_handler=_clarify) as c:
        yield c


def test_research_task_end_to_end(client: mcpsync.Client) -> None:
    assert client.era == "legacy"
    assert client.server_capabilities.tasks is not None
    statuses: list[tuple[str, str | None]] = []
    handle = client.start_tool_task(
        RESEARCH, {"topic": "mcp"}, ttl_ms=60_000, on_status=lambda t: statuses.append((t.status, t.status_message))
    )
    assert handle.task_id
    assert handle.state is not None and handle.state.status == "working"
    assert handle.state.ttl_ms == 300_000  # the server picks the lifetime (it ignores ours)
    result = handle.wait(timeout=60, poll_interval=0.2)
    assert "# Research Report: mcp" in result.text
    assert any(message and "Analyzing" in message for _, message in statuses)
    # Another handle with only the id sees the finished task.
    assert client.task(handle.task_id).status().status == "completed"
    assert handle.task_id in {t.task_id for t in client.list_tasks()}


def test_input_required_is_answered_by_the_elicitation_handler(client: mcpsync.Client) -> None:
    handle = client.start_tool_task(RESEARCH, {"topic": "python", "ambiguous": True})
    result = handle.wait(timeout=60, poll_interval=0.2)
    assert "Clarification**: programming" in result.text


def test_wait_from_another_thread_by_id(client: mcpsync.Client) -> None:
    task_id = client.start_tool_task(RESEARCH, {"topic": "threads"}).task_id
    assert task_id
    out: list[str] = []

    def worker() -> None:
        out.append(client.task(task_id).wait(timeout=60, poll_interval=0.2).text)

    t = threading.Thread(target=worker)
    t.start()
    t.join(70)
    assert out and "# Research Report: threads" in out[0]


def test_cancel(client: mcpsync.Client) -> None:
    handle = client.start_tool_task(RESEARCH, {"topic": "cancel me"})
    handle.cancel()
    assert handle.state is not None and handle.state.status == "cancelled"
    with pytest.raises(mcpsync.TaskCancelled) as info:
        handle.wait(timeout=10)
    assert info.value.task.status == "cancelled"


def test_unknown_task_id(client: mcpsync.Client) -> None:
    with pytest.raises(mcpsync.TaskNotFound):
        client.task("no-such-task").status()
    started = time.monotonic()
    with pytest.raises(mcpsync.TaskNotFound):
        client.task("no-such-task").wait(timeout=30)
    assert time.monotonic() - started < 10


def test_tool_without_task_support_runs_inline(client: mcpsync.Client) -> None:
    handle = client.start_tool_task("echo", {"message": "hi"})
    assert handle.task_id is None
    assert handle.wait(timeout=5).text == "Echo: hi"


def test_wait_is_bounded(client: mcpsync.Client) -> None:
    handle = client.start_tool_task(RESEARCH, {"topic": "slow"})
    started = time.monotonic()
    with pytest.raises(mcpsync.RequestTimeout):
        handle.wait(timeout=0.5, poll_interval=0.1)
    assert time.monotonic() - started < 3.0
    handle.cancel()


# --------------------------------------------------------------------------- the client runs tasks


def _sample(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent("forty-two"), model="test-model")


def _elicit_form(params: types.ElicitRequestFormParams) -> types.ElicitResult:
    return types.ElicitResult("accept", content={"name": "Ada"})


def test_server_runs_sampling_as_a_task_on_the_client(everything_server: list[str]) -> None:
    with mcpsync.Client.stdio(everything_server, timeout=60, sampling_handler=_sample, serve_tasks=True) as c:
        text = c.call_tool("trigger-sampling-request-async", {"prompt": "hi"}).text
    assert text.startswith("[COMPLETED]"), text
    assert "Task created: " in text and "forty-two" in text


def test_server_runs_elicitation_as_a_task_on_the_client(everything_server: list[str]) -> None:
    with mcpsync.Client.stdio(everything_server, timeout=60, elicitation_handler=_elicit_form, serve_tasks=True) as c:
        text = c.call_tool("trigger-elicitation-request-async", {}).text
    assert text.startswith("[COMPLETED]"), text
    assert "Name: Ada" in text


def test_a_failing_handler_fails_the_task(everything_server: list[str]) -> None:
    reported: list[BaseException] = []

    def broken(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        raise RuntimeError("secret detail")

    with mcpsync.Client.stdio(
        everything_server, timeout=60, sampling_handler=broken, serve_tasks=True, exception_handler=reported.append
    ) as c:
        text = c.call_tool("trigger-sampling-request-async", {"prompt": "hi"}).text
    assert text.startswith("[FAILED]"), text
    assert "secret detail" not in text
    assert reported and isinstance(reported[0], RuntimeError)


def test_without_serve_tasks_the_async_tools_are_not_offered(everything_server: list[str]) -> None:
    with mcpsync.Client.stdio(everything_server, timeout=30, sampling_handler=_sample) as c:
        names = {tool.name for tool in c.list_tools()}
    assert "trigger-sampling-request" in names
    assert "trigger-sampling-request-async" not in names
