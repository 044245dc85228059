"""Tasks (the ``io.modelcontextprotocol/tasks`` extension, 2026-07-28) against a real server.

The peer is FastMCP with fastmcp-tasks (``tests/servers/tasks_server.py``), run from its own
venv (``tests/helpers_peervenv.py``) with Docket's in-memory backend: over stdio for one
client, over Streamable HTTP where several clients (and another process) share its tasks.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers_peervenv import peer_python

import mcpsync
from mcpsync import types
from tests.auth_server.conftest_auth import stop_peer
from tests.contrib_support import free_port

SERVER = Path(__file__).resolve().parent / "servers" / "tasks_server.py"

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def tasks_server() -> list[str]:
    """Command line of the fastmcp-tasks server over stdio (builds the peer venv once)."""
    return [peer_python(), str(SERVER)]


def _elicit_name(params: types.ElicitRequestFormParams) -> types.ElicitResult:
    assert params.message == "Your name?"
    return types.ElicitResult("accept", content={"name": "Luca"})


@pytest.fixture
def client(tasks_server: list[str]) -> Iterator[mcpsync.Client]:
    with mcpsync.Client.stdio(tasks_server, timeout=30.0, elicitation_handler=_elicit_name) as c:
        yield c


def test_server_declares_the_extension(client: mcpsync.Client) -> None:
    assert client.era == "modern"
    assert types.TASKS_EXTENSION_ID in client.server_extensions


def test_start_returns_at_once_and_wait_gets_the_result(client: mcpsync.Client) -> None:
    seen: list[str] = []
    done = threading.Event()

    def on_status(task: types.DetailedTask) -> None:
        seen.append(task.status)
        if task.terminal:
            done.set()

    handle = client.start_tool_task("sleepy", {"seconds": 1.0}, on_status=on_status)
    assert handle.task_id
    assert handle.state is not None and handle.state.status == "working"
    assert handle.state.result_type == "task"
    result = handle.wait(timeout=30)
    assert result.text == "slept 1.0"
    assert done.wait(5)
    assert seen[0] == "working" and seen[-1] == "completed"
    # Finished tasks can be asked about again, from a fresh handle.
    again = client.task(handle.task_id)
    assert again.status().status == "completed"
    assert again.wait(timeout=10).text == "slept 1.0"


def test_per_request_opt_in_only(client: mcpsync.Client) -> None:
    # Without the per-request opt-in the server runs an optional task tool inline...
    assert client.call_tool("sleepy", {"seconds": 0}).text == "slept 0.0"
    # ...and refuses a task-only tool, naming the extension.
    with pytest.raises(mcpsync.MissingClientCapability) as info:
        client.call_tool("must_task", {"seconds": 0})
    assert types.TASKS_EXTENSION_ID in info.value.required["extensions"]
    handle = client.start_tool_task("must_task", {"seconds": 0.2})
    assert handle.wait(timeout=30).text == "tasked 0.2"


def test_server_decides_per_request(client: mcpsync.Client) -> None:
    handle = client.start_tool_task("quick", {"x": 21})
    assert handle.task_id is None
    assert handle.state is not None and handle.state.status == "completed"
    assert handle.wait(timeout=1).structured_content == {"result": 42}
    assert handle.status().status == "completed"
    handle.cancel()  # nothing to cancel: a no-op


def test_input_required_goes_through_the_elicitation_handler(client: mcpsync.Client) -> None:
    handle = client.start_tool_task("ask_name")
    assert handle.wait(timeout=30).text == "Hello, Luca!"


def test_failed_task_raises_its_jsonrpc_error(client: mcpsync.Client) -> None:
    handle = client.start_tool_task("broken")
    with pytest.raises(mcpsync.TaskFailed) as info:
        handle.wait(timeout=30)
    assert info.value.code == -32603
    assert "on fire" in info.value.message
    assert isinstance(info.value, mcpsync.ServerError)
    assert info.value.task.status == "failed"


def test_tool_error_is_a_completed_task_with_is_error(client: mcpsync.Client) -> None:
    result = client.start_tool_task("oops").wait(timeout=30)
    assert result.is_error
    with pytest.raises(mcpsync.ToolError):
        result.raise_for_error()


def test_cancel(client: mcpsync.Client) -> None:
    handle = client.start_tool_task("sleepy", {"seconds": 60})
    handle.cancel()
    with pytest.raises(mcpsync.TaskCancelled):
        handle.wait(timeout=30)
    assert handle.state is not None and handle.state.status == "cancelled"


def test_unknown_task_id_is_a_typed_error(client: mcpsync.Client) -> None:
    handle = client.task("no-such-task")
    with pytest.raises(mcpsync.TaskNotFound) as info:
        handle.status()
    assert info.value.task_id == "no-such-task"
    assert isinstance(info.value, mcpsync.InvalidParams)
    started = time.monotonic()
    with pytest.raises(mcpsync.TaskNotFound):
        handle.wait(timeout=30)
    assert time.monotonic() - started < 10
    with pytest.raises(ValueError):
        client.task("")


def test_wait_is_bounded_and_the_task_keeps_running(client: mcpsync.Client) -> None:
    handle = client.start_tool_task("sleepy", {"seconds": 2.0})
    started = time.monotonic()
    with pytest.raises(mcpsync.RequestTimeout):
        handle.wait(timeout=0.5)
    assert time.monotonic() - started < 3.0
    assert handle.wait(timeout=30).text == "slept 2.0"


def test_close_releases_a_waiting_thread(tasks_server: list[str]) -> None:
    c = mcpsync.Client.stdio(tasks_server, timeout=30.0)
    task_id = c.start_tool_task("sleepy", {"seconds": 60}).task_id or ""
    errors: list[BaseException] = []
    polled = threading.Event()
    waiting = c.task(task_id, on_status=lambda task: polled.set())

    def waiter() -> None:
        try:
            waiting.wait(timeout=60, poll_interval=30)  # a long sleep between polls
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=waiter)
    t.start()
    try:
        assert polled.wait(20)  # the first poll is done; the waiter sleeps or is about to
    finally:
        started = time.monotonic()
        c.close()
        t.join(5)
    assert not t.is_alive()
    assert time.monotonic() - started < 3.0
    assert errors and isinstance(errors[0], mcpsync.ClientClosed)


def test_call_tool_drives_a_task_when_the_extension_is_on_for_every_request(tasks_server: list[str]) -> None:
    with mcpsync.Client.stdio(tasks_server, timeout=30.0, extensions={types.TASKS_EXTENSION_ID: {}}) as c:
        result = c.call_tool("sleepy", {"seconds": 0.3})
    assert result.text == "slept 0.3"


# --------------------------------------------------------------------------- many clients


@pytest.fixture(scope="module")
def tasks_http(tasks_server: list[str]) -> Iterator[str]:
    """The same server over Streamable HTTP on 127.0.0.1: one task store for several clients."""
    port = free_port()
    proc = subprocess.Popen(
        [*tasks_server, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("the fastmcp-tasks HTTP server did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_peer(proc)


WORKER = textwrap.dedent(
    """
    import sys, mcpsync
    url, task_id = sys.argv[1], sys.argv[2]
    with mcpsync.Client.http(url, timeout=30) as client:
        print(client.task(task_id).wait(timeout=60).text)
    """
)


@pytest.mark.allow_leaks  # the module-scoped HTTP server outlives the test
def test_submit_in_one_process_wait_in_another(tasks_http: str) -> None:
    """The Celery shape: a view starts the task and keeps its id; a worker process waits."""
    with mcpsync.Client.http(tasks_http, timeout=30) as view_client:
        task_id = view_client.start_tool_task("sleepy", {"seconds": 1.0}).task_id
    assert task_id
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, tasks_http, task_id], capture_output=True, text=True, timeout=90
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "slept 1.0"


@pytest.mark.allow_leaks
def test_cancel_from_another_client(tasks_http: str) -> None:
    with mcpsync.Client.http(tasks_http, timeout=30) as a, mcpsync.Client.http(tasks_http, timeout=30) as b:
        handle = a.start_tool_task("sleepy", {"seconds": 60})
        b.task(handle.task_id or "").cancel()
        with pytest.raises(mcpsync.TaskCancelled):
            handle.wait(timeout=30)
