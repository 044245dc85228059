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

import itertools
import secrets
import threading
import time
from typing import Any

from mcpsync.testing.server.context import Peer, RpcError, ToolContext
from mcpsync.testing.server.call import InputRequired, ModernCall
from mcpsync.testing.server.results import stamp
from mcpsync.types.tasks import TASKS_EXTENSION_ID, TERMINAL_STATUSES, iso_now, task_fields


__all__ = ["ServerTasks", "TASK_MODES", "declares_tasks", "route"]

#: What ``FakeServer.tool(task=...)`` accepts (``None``: never a task).
TASK_MODES = (None, "optional", "required")
_INVALID_PARAMS, _INTERNAL_ERROR, _MISSING_CAPABILITY = -32602, -32603, -32021
#: Lifetime of a task, and the bound on how long one waits for the client's input (ms).
TTL_MS = 300_000
POLL_INTERVAL_MS = 100
_thread_numbers = itertools.count(1)


def declares_tasks(call: ModernCall) -> bool:
    """Whether this request declared the tasks extension in its client capabilities."""
    extensions = call.client_capabilities.get("extensions")
    return isinstance(extensions, dict) and TASKS_EXTENSION_ID in extensions


def _missing_capability(what: str) -> RpcError:
    return RpcError(
        _MISSING_CAPABILITY,
        f"{what} needs the tasks extension ({TASKS_EXTENSION_ID}) declared on the request",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}}},
    )


class _Task:
    def __init__(self, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> None:
        self.id = secrets.token_urlsafe(16)
        self.name = name
        self.arguments = arguments
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
        self.answered = threading.Condition()
        self.cancelled = threading.Event()

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
    """The tasks of one server (all its connections); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, _Task] = {}
        self._threads: set[threading.Thread] = set()

    def start(
        self, conn: Peer, request_id: Any, params: dict[str, Any], call: ModernCall, mode: str
    ) -> None:
        """Answer a ``tools/call`` for a task tool: a new task, or -32021 for a ``required``
        tool called without the extension (an ``optional`` one then runs as a plain call)."""
        if not declares_tasks(call):
            if mode == "required":
                conn._error(request_id, _missing_capability(f"tool {params.get('name')!r}"))
            else:
                conn._start_tool(request_id, params, call)
            return
        meta = params.get("_meta")
        task = _Task(str(params.get("name")), dict(params.get("arguments") or {}), meta if isinstance(meta, dict) else {})
        thread = threading.Thread(
            target=self._run, args=(conn, task), name=f"mcpsync-fakeserver-task-{next(_thread_numbers)}", daemon=True
        )
        with self._lock:
            self._purge()
            self._tasks[task.id] = task
            self._threads.add(thread)
            created = task.wire()  # created before the reply: a tasks/get at once finds it
        thread.start()
        conn._respond(request_id, stamp(conn, "tools/call", {**created, "resultType": "task"}))

    def handle(self, conn: Peer, method: str, params: dict[str, Any], call: ModernCall) -> dict[str, Any]:
        """``tasks/get``, ``tasks/update`` or ``tasks/cancel``; raises :class:`RpcError`."""
        if not declares_tasks(call):
            raise _missing_capability(method)
        task_id = params.get("taskId")
        with self._lock:
            self._purge()
            task = self._tasks.get(task_id) if isinstance(task_id, str) else None
            if task is None:
                raise RpcError(_INVALID_PARAMS, "Failed to retrieve task: Task not found")
            if method == "tasks/get":
                return stamp(conn, method, task.wire())
        if method == "tasks/update":
            responses = params.get("inputResponses")
            if not isinstance(responses, dict):
                raise RpcError(_INVALID_PARAMS, "tasks/update needs inputResponses")
            with task.answered:
                # Only keys the task is waiting for; others are ignored, as the spec says.
                task.answers.update({k: v for k, v in responses.items() if k in task.asking})
                task.answered.notify_all()
        else:
            task.cancelled.set()
            with task.answered:
                task.answered.notify_all()
        return stamp(conn, method, {})

    def _run(self, conn: Peer, task: _Task) -> None:
        try:
            while True:
                call = ModernCall(task.meta, {"inputResponses": dict(task.answers)})
                ctx = ToolContext(conn, None, task.meta, call)
                ctx.cancelled = task.cancelled
                try:
                    result = conn.app.call_tool(task.name, task.arguments, ctx)
                except InputRequired as needed:
                    if not self._ask(task, needed):
                        return
                    continue
                self._end(task, "completed", result=result)
                return
        except RpcError as exc:
            self._end(task, "failed", error=exc.to_wire(), message=exc.message)
        except Exception as exc:
            self._end(task, "failed", error=RpcError(_INTERNAL_ERROR, f"{type(exc).__name__}: {exc}").to_wire())
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _ask(self, task: _Task, needed: InputRequired) -> bool:
        """Park the task in ``input_required`` until the client answers; False if it ended."""
        with self._lock:
            if task.cancelled.is_set():
                self._settle(task, "cancelled")
                return False
            task.asking = {needed.key: needed.request}
            self._settle(task, "input_required")
        with task.answered:
            task.answered.wait_for(
                lambda: needed.key in task.answers or task.cancelled.is_set(),
                timeout=max(0.0, task.expires - time.monotonic()),
            )
        with self._lock:
            if needed.key not in task.answers:
                self._settle(task, "cancelled" if task.cancelled.is_set() else "failed")
                if task.status == "failed":
                    task.error = {"code": _INTERNAL_ERROR, "message": "no answer within the task's lifetime"}
                return False
            task.asking = {}
            self._settle(task, "working")
        return True

    def _end(self, task: _Task, status: str, **fields: Any) -> None:
        with self._lock:
            if task.cancelled.is_set():
                status = "cancelled"  # cooperative: a tool that finished anyway stays cancelled
            task.result = fields.get("result")
            task.error = fields.get("error")
            self._settle(task, status, fields.get("message"))

    def _settle(self, task: _Task, status: str, message: str | None = None) -> None:
        if task.status in TERMINAL_STATUSES:
            return
        task.status, task.message, task.updated = status, message, iso_now()

    def _purge(self) -> None:
        now = time.monotonic()
        for key in [k for k, t in self._tasks.items() if t.expires <= now and t.status in TERMINAL_STATUSES]:
            del self._tasks[key]

    def join(self, timeout: float) -> None:
        """Cancel every task and wait (at most *timeout* seconds in all) for their threads."""
        with self._lock:
            tasks = list(self._tasks.values())
            threads = list(self._threads)
        for task in tasks:
            task.cancelled.set()
            with task.answered:
                task.answered.notify_all()
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def route(conn: Peer, request_id: Any, method: str, params: dict[str, Any], call: ModernCall) -> bool:
    """Serve *method* here when it is about tasks; False to let the engine go on.

    Only an app with a ``tasks`` store (:class:`~mcpsync.testing.FakeServer`)
    serves them; for any other, ``tasks/*`` stay unknown methods.
    """
    tasks = getattr(conn.app, "tasks", None)
    if not isinstance(tasks, ServerTasks):
        return False
    if method == "tools/call":
        task_mode = getattr(conn.app, "task_mode", None)
        name = params.get("name")
        mode = task_mode(name) if callable(task_mode) and isinstance(name, str) else None
        if mode is None:
            return False
        tasks.start(conn, request_id, params, call, mode)
        return True
    if method not in ("tasks/get", "tasks/update", "tasks/cancel"):
        return False
    try:
        result = tasks.handle(conn, method, params, call)
    except RpcError as exc:
        conn._error(request_id, exc)
    else:
        conn._respond(request_id, result)
    return True

