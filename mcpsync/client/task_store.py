"""The client as a task *receiver* (2025-11-25): a server's sampling or elicitation request run as a task.

A handshake-era server may send ``sampling/createMessage`` or
``elicitation/create`` with ``params.task`` to a client that declared
``tasks.requests.sampling.createMessage`` / ``tasks.requests.elicitation.create``
(``Client(..., serve_tasks=True)``).  The client then answers at once with a
task, runs the user's ordinary handler on a handler worker, and serves the
server's ``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel``
about it.  2026-07-28 has no server-to-client requests (MRTR instead), so this
is handshake era only.

Memory is bounded: at most :data:`MAX_TASKS` are kept, and a task is dropped
once its ``ttl`` has passed (the lifetime the server asked for, capped).
"""

from __future__ import annotations

import secrets
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable

from mcpsync.exceptions import McpError, ServerError
from mcpsync.types.tasks import iso_now, task_fields

__all__ = ["ClientTaskStore", "TASK_METHODS", "iso_now", "task_capabilities", "task_fields"]

#: What the server may ask the client to run as a task, as (method, capability path).
_RUNNABLE = {"sampling/createMessage": ("sampling", "createMessage"), "elicitation/create": ("elicitation", "create")}
#: The methods a server uses to follow the client's tasks.
TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
#: Bound on tasks kept at once; beyond it a new task request is refused.
MAX_TASKS = 1000
#: Bound on a task's lifetime, whatever the server asks (ms).
MAX_TTL_MS = 24 * 3600 * 1000
DEFAULT_TTL_MS = 600_000
POLL_INTERVAL_MS = 500


def task_capabilities(sampling: bool, elicitation: bool) -> dict[str, Any]:
    """The ``tasks`` client capability for the handlers that are configured."""
    requests: dict[str, Any] = {}
    if sampling:
        requests["sampling"] = {"createMessage": {}}
    if elicitation:
        requests["elicitation"] = {"create": {}}
    return {"list": {}, "cancel": {}, "requests": requests}


class _Task:
    def __init__(self, ttl_ms: int) -> None:
        self.id = secrets.token_urlsafe(16)  # unguessable: the id is all a server needs to ask
        self.status = "working"
        self.status_message: str | None = None
        self.created = self.updated = iso_now()
        self.ttl_ms = ttl_ms
        self.expires = time.monotonic() + ttl_ms / 1000.0
        self.future: Future[dict[str, Any]] = Future()

    def wire(self) -> dict[str, Any]:
        task = task_fields(self.id, self.status, self.created, self.updated, self.status_message)
        task.update(ttl=self.ttl_ms, pollInterval=POLL_INTERVAL_MS)  # the 2025-11-25 names
        return task


class ClientTaskStore:
    """The tasks this client runs for its server; thread-safe, bounded."""

    def __init__(self, submit: Callable[..., bool], answer: Callable[[str, dict[str, Any]], dict[str, Any]],
                 report: Callable[[BaseException], None]) -> None:
        #: ``submit(fn, *args)``: runs *fn* on a handler worker; False when shutting down.
        self._submit = submit
        #: ``answer(method, params)``: the user's handler, as for any server request.
        self._answer = answer
        #: Where a handler's own exception goes (``exception_handler`` or the log).
        self._report = report
        self._lock = threading.Lock()
        self._tasks: dict[str, _Task] = {}

    def handles(self, method: str, params: dict[str, Any]) -> bool:
        """Whether this request is one for the store (a task request, or ``tasks/*``)."""
        return method in TASK_METHODS or (method in _RUNNABLE and isinstance(params.get("task"), dict))

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer a request :meth:`handles` accepted; raises :class:`ServerError` for the peer."""
        if method in _RUNNABLE:
            return self._start(method, params)
        if method == "tasks/list":
            with self._lock:
                self._purge()
                return {"tasks": [task.wire() for task in self._tasks.values()]}
        task = self._find(params.get("taskId"))
        if method == "tasks/get":
            with self._lock:
                return task.wire()
        if method == "tasks/cancel":
            with self._lock:
                if task.status not in ("completed", "failed", "cancelled"):
                    self._settle(task, "cancelled", "cancelled by the server")
                return task.wire()
        return self._result(task)

    def _start(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        ttl = params["task"].get("ttl")
        ttl_ms = ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0 else DEFAULT_TTL_MS
        task = _Task(min(ttl_ms, MAX_TTL_MS))
        request = {k: v for k, v in params.items() if k != "task"}
        with self._lock:
            self._purge()
            if len(self._tasks) >= MAX_TASKS:
                raise ServerError(-32603, f"client has {MAX_TASKS} tasks already")
            self._tasks[task.id] = task
            seed = task.wire()  # before the handler can finish: the state it was created in
        if not self._submit(self._run, task, method, request):
            with self._lock:
                self._tasks.pop(task.id, None)
            raise ServerError(-32603, "client is shutting down")
        return {"task": seed}

    def _run(self, task: _Task, method: str, request: dict[str, Any]) -> None:
        try:
            result = self._answer(method, request)
        except Exception as exc:
            if isinstance(exc, ServerError):
                error = exc
            else:
                if not isinstance(exc, McpError):
                    self._report(exc)
                # As for a plain server request: the server learns that the handler
                # failed, not its (maybe sensitive) message.
                error = ServerError(-32603, f"client handler failed ({type(exc).__name__})")
            with self._lock:
                if self._settle(task, "failed", error.message):
                    task.future.set_exception(error)
            return
        with self._lock:
            if self._settle(task, "completed", None):
                task.future.set_result(result)

    def _result(self, task: _Task) -> dict[str, Any]:
        """``tasks/result``: block this handler worker until the task ends (bounded by its TTL)."""
        try:
            return task.future.result(timeout=max(0.0, task.expires - time.monotonic()))
        except FutureTimeout:
            raise ServerError(-32603, f"task {task.id} did not finish within its ttl") from None

    def _settle(self, task: _Task, status: str, message: str | None) -> bool:
        """Move *task* to a terminal *status* (under the lock); False if it already ended."""
        if task.status in ("completed", "failed", "cancelled"):
            return False
        task.status, task.status_message, task.updated = status, message, iso_now()
        if status == "cancelled":
            task.future.set_exception(ServerError(-32603, f"task {task.id} was cancelled"))
        return True

    def _find(self, task_id: Any) -> _Task:
        with self._lock:
            self._purge()
            task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise ServerError(-32602, "Failed to retrieve task: Task not found")
        return task

    def _purge(self) -> None:
        now = time.monotonic()
        for key in [key for key, task in self._tasks.items() if task.expires <= now]:
            del self._tasks[key]
