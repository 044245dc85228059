"""Tasks in the server engine: the ``io.modelcontextprotocol/tasks`` extension (2026-07-28).

A tool registered with ``task="optional"`` or ``task="required"`` runs as a
task when the ``tools/call`` request declares the extension (``required``
without it is -32021).  The call is answered at once with
``resultType: "task"``; the tool runs on its own thread; ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` follow it.  Tasks belong to the
server, not to a connection, so any client of the same
:class:`~mcpsync.testing.FakeServer` can follow one by its id.

A tool that asks the client something (``ctx.elicit()``, ``ctx.sample()``,
``ctx.list_roots()``) moves its task to ``input_required`` with that request
in ``inputRequests``; the answer from ``tasks/update`` runs the tool again from
the start with the answers so far, as a multi round-trip request does.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from mcpsync.testing.server.connection import ServerConnection, ThreadSet
from mcpsync.testing.server.context import ToolContext
from mcpsync.testing.server.errors import INTERNAL_ERROR, INVALID_PARAMS, MISSING_CAPABILITY, RpcError, internal_error
from mcpsync.testing.server.modern import InputRequired, ModernCall
from mcpsync.types.tasks import TASKS_EXTENSION_ID, TERMINAL_STATUSES, iso_now, task_fields


#: What ``FakeServer.tool(task=...)`` accepts (``None``: never a task).
TASK_MODES = (None, "optional", "required")
#: Lifetime of a task, and the bound on how long one waits for the client's input (ms).
TTL_MS = 300_000
POLL_INTERVAL_MS = 100

#: Runs a tool: ``(name, arguments, ctx) -> CallToolResult`` (a wire dict).
RunTool = Callable[[str, "dict[str, Any]", ToolContext], "dict[str, Any]"]


def missing_capability(what: str) -> RpcError:
    """The -32021 answer for a request that needed the tasks extension declared."""
    return RpcError(MISSING_CAPABILITY, f"{what} needs the tasks extension ({TASKS_EXTENSION_ID}) declared on "
                    "the request", {"requiredCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}}})


class _Task:
    def __init__(self, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> None:
        self.id = secrets.token_urlsafe(16)
        self.name, self.arguments = name, arguments
        # The creating request's _meta, less what belonged to that request alone.
        self.meta = {k: v for k, v in meta.items() if k != "progressToken"}
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = iso_now()
        self.expires = time.monotonic() + TTL_MS / 1000.0
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.asking: dict[str, Any] = {}
        self.answers: dict[str, Any] = {}
        self.cancelled = threading.Event()

    def settle(self, status: str, message: str | None = None) -> None:
        # Only the task's own thread settles it, and only once in a terminal status.
        self.status, self.message, self.updated = status, message, iso_now()

    def wire(self) -> dict[str, Any]:
        task = task_fields(self.id, self.status, self.created, self.updated, self.message)
        task.update(ttlMs=TTL_MS, pollIntervalMs=POLL_INTERVAL_MS)
        if self.status == "input_required":
            task["inputRequests"] = dict(self.asking)
        elif self.status == "completed":
            task["result"] = self.result
        elif self.status == "failed":
            task["error"] = self.error
        return task


class ServerTasks:
    """The tasks of one server (all its connections); thread-safe.

    :param run_tool: runs a tool (``Registry.call_tool``).
    """

    def __init__(self, run_tool: RunTool) -> None:
        self._run_tool = run_tool
        self._cond = threading.Condition()  # guards the tasks; notified on every answer and cancel
        self._tasks: dict[str, _Task] = {}
        self._threads = ThreadSet("task")

    def start(self, conn: ServerConnection, name: str, arguments: dict[str, Any], meta: dict[str, Any]
              ) -> dict[str, Any]:
        """Start tool *name* as a task; the ``tools/call`` result that announces it."""
        task = _Task(name, arguments, meta)
        with self._cond:
            self._purge()
            self._tasks[task.id] = task
            created = task.wire()  # before the thread starts, and stored: a tasks/get at once finds it
        self._threads.start(lambda: self._run(conn, task))
        return {**created, "resultType": "task"}

    def handle(self, method: str, params: dict[str, Any], call: ModernCall) -> dict[str, Any]:
        """``tasks/get``, ``tasks/update`` or ``tasks/cancel``; raises :class:`RpcError`."""
        if not call.declares_tasks:
            raise missing_capability(method)
        task_id = params.get("taskId")
        with self._cond:
            self._purge()
            task = self._tasks.get(task_id) if isinstance(task_id, str) else None
            if task is None:
                raise RpcError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
            if method == "tasks/get":
                return task.wire()
            if method == "tasks/update":
                responses = params.get("inputResponses")
                if not isinstance(responses, dict):
                    raise RpcError(INVALID_PARAMS, "tasks/update needs inputResponses")
                # Only keys the task is waiting for; others are ignored, as the spec says.
                task.answers.update({k: v for k, v in responses.items() if k in task.asking})
            else:
                task.cancelled.set()
            self._cond.notify_all()
        return {}

    def _run(self, conn: ServerConnection, task: _Task) -> None:
        while True:
            with self._cond:
                call = ModernCall(task.meta, {"inputResponses": dict(task.answers)})
            ctx = ToolContext(conn, None, task.meta, call, task.cancelled)
            try:
                result = self._run_tool(task.name, task.arguments, ctx)
            except InputRequired as needed:
                if self._ask(task, needed):
                    continue  # answered: run the tool again with the answers
            except Exception as exc:
                error = exc if isinstance(exc, RpcError) else internal_error(exc)
                self._end(task, "failed", error=error.to_wire(), message=error.message)
            else:
                self._end(task, "completed", result=result)
            return

    def _ask(self, task: _Task, needed: InputRequired) -> bool:
        """Park the task in ``input_required`` until the client answers; False if it ended."""
        with self._cond:
            if not task.cancelled.is_set():
                task.asking = {needed.key: needed.request}
                task.settle("input_required")
                self._cond.wait_for(lambda: needed.key in task.answers or task.cancelled.is_set(),
                                    timeout=max(0.0, task.expires - time.monotonic()))
            if needed.key in task.answers and not task.cancelled.is_set():
                task.asking = {}
                task.settle("working")
                return True
        if task.cancelled.is_set():
            self._end(task, "cancelled")
        else:
            self._end(task, "failed", error={"code": INTERNAL_ERROR, "message": "no answer within the task's lifetime"})
        return False

    def _end(self, task: _Task, status: str, **fields: Any) -> None:
        with self._cond:
            task.result, task.error = fields.get("result"), fields.get("error")
            # Cooperative: a tool that finished after a cancel stays cancelled.
            task.settle("cancelled" if task.cancelled.is_set() else status, fields.get("message"))

    def _purge(self) -> None:
        now = time.monotonic()
        for key in [k for k, t in self._tasks.items() if t.expires <= now and t.status in TERMINAL_STATUSES]:
            del self._tasks[key]

    def join(self, timeout: float) -> None:
        """Cancel every task and wait (at most *timeout* seconds in all) for their threads."""
        with self._cond:
            for task in self._tasks.values():
                task.cancelled.set()
            self._cond.notify_all()
        self._threads.join(timeout)
