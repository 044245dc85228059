"""Tasks: start a tool call that outlives a request, then follow it from anywhere by its id.

Two wire forms, one API:

* **2026-07-28**, the ``io.modelcontextprotocol/tasks`` extension (SEP-2663):
  the client opts in per request (the extension in that request's
  ``clientCapabilities``), the server decides per request whether to answer
  ``tools/call`` with a task (``resultType: "task"``) or with the result;
  ``tasks/get`` carries the status, the final result or error, and
  ``inputRequests`` that the client answers with ``tasks/update``;
  ``tasks/cancel`` asks the server to stop.
* **2025-11-25**, tasks in the core protocol: the server declares
  ``capabilities.tasks.requests.tools.call`` and each tool its
  ``execution.taskSupport``; the client asks with ``params.task``, polls
  ``tasks/get`` and fetches the outcome with ``tasks/result``, during which the
  server sends its elicitation or sampling requests as ordinary requests.

In both, a task's input requests are answered by the same handlers as
everything else (``sampling_handler``, ``elicitation_handler``, ``roots``).
A :class:`TaskHandle` holds nothing but the task id and what it last saw, so
any thread, process or machine with a client for the same server can pick a
task up with :meth:`mcpsync.Client.task`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpsync import types
from mcpsync.client.core import Core, paginate, require
from mcpsync.client.extensions import request_meta
from mcpsync.client.options import DEFAULT, TimeoutArg
from mcpsync.client.task_handle import StatusCallback, TaskHandle, completed, created, legacy_task
from mcpsync.exceptions import CapabilityNotSupported
from mcpsync.rpc.deadline import Deadline
from mcpsync.types.tasks import TASKS_EXTENSION_ID, DetailedTask

__all__ = ["list_tasks", "start_tool_task", "task"]


def start_tool_task(client: Core, name: str, arguments: Mapping[str, Any] | None = None, *,
                    timeout: TimeoutArg = DEFAULT, ttl_ms: int | None = None, meta: Mapping[str, Any] | None = None,
                    on_status: StatusCallback | None = None) -> TaskHandle:
    """Call a tool as a task and return a handle as soon as the server created it.

    The server decides: a tool it runs at once comes back as a handle that is already
    complete (``task_id`` is ``None``).  *timeout* bounds this call only (creating the
    task, and any ``input_required`` rounds the server asks for first); wait for the
    outcome with :meth:`TaskHandle.wait`.

    :param ttl_ms: how long the server should keep the task (2025-11-25 servers; the
        extension lets the server choose).
    :param on_status: ``fn(task)`` for each status change a :meth:`~TaskHandle.wait` on
        this handle sees, run on the dispatcher thread.
    """
    deadline = client._options.deadline(timeout)
    conn = client._connection(deadline)
    require(conn.capabilities, "tools", "tools/call")
    params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
    if meta:
        params["_meta"] = dict(meta)
    if conn.era == "modern":
        params["_meta"] = {**params.get("_meta", {}), **request_meta(conn, {TASKS_EXTENSION_ID: {}})}
        raw = client._call("tools/call", params, deadline, accept=("task",))
        if raw.get("resultType") != "task":
            return TaskHandle(client, None, state=completed(raw), on_status=on_status)
        state = types.from_wire(DetailedTask, raw)
    else:
        # One deadline for both: a tools/list to learn the tool's task support, then the call.
        if _legacy_task_support(client, name, deadline):
            params["task"] = {} if ttl_ms is None else {"ttl": ttl_ms}
        raw = client._call("tools/call", params, deadline, rounds=False)
        if not isinstance(raw.get("task"), dict):
            return TaskHandle(client, None, state=completed(raw), on_status=on_status)
        state = legacy_task(types.from_wire(types.CreateTaskResult, raw).task)
    return created(client, state, on_status)


def task(client: Core, task_id: str, *, on_status: StatusCallback | None = None) -> TaskHandle:
    """A handle for a task started elsewhere (another thread, process or host).

    Nothing is sent until you call a method of the handle.

    :raises ValueError: for an empty or non-string *task_id*.
    """
    if not isinstance(task_id, str) or not task_id:
        raise ValueError(f"task_id must be a non-empty string, not {task_id!r}")
    return TaskHandle(client, task_id, on_status=on_status)


def list_tasks(client: Core, *, timeout: TimeoutArg = DEFAULT) -> list[DetailedTask]:
    """The tasks a 2025-11-25 server lists (``tasks/list``, every page).

    The extension of 2026-07-28 has no such method (so that one caller's tasks cannot
    leak to another): keep the ids you start.

    :raises CapabilityNotSupported: on a modern server, or one that does not declare
        ``tasks.list``.
    """
    deadline = client._options.deadline(timeout)
    if client._connection(deadline).era == "modern":
        raise CapabilityNotSupported("tasks.list", "tasks/list")
    found = paginate(client, "tasks/list", "tasks", types.ListTasksResult, "tasks.list", deadline, False)
    return [legacy_task(item) for item in found]


def _legacy_task_support(client: Core, name: str, deadline: Deadline) -> bool:
    """Whether a 2025-11-25 server takes ``params.task`` for tool *name*."""
    tasks = client._connection(deadline).capabilities.tasks
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    if not isinstance(tools, dict) or tools.get("call") is None:
        return False
    tool = client._tools.get(name)
    if tool is None:
        tool = next((t for t in client.list_tools(timeout=deadline) if t.name == name), None)
    support = tool.execution.task_support if tool is not None and tool.execution is not None else None
    return support in ("optional", "required")
