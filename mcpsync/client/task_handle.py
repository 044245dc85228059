"""A task on the server, followed by its id: :class:`TaskHandle` (see :mod:`mcpsync.client.tasks`).

The handle polls ``tasks/get`` (waking early on the server's status pushes),
answers a task's input requests with the client's ordinary handlers
(``tasks/update``), and turns the end state into a result or a typed error.
Both wire forms: the 2026-07-28 extension, and the 2025-11-25 core form
(where ``tasks/result`` fetches the outcome).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpsync import types
from mcpsync.client.core import Core, TaskWaiters
from mcpsync.client.extensions import request_meta
from mcpsync.client.input_required import answer_inputs
from mcpsync.client.options import DEFAULT, TimeoutArg
from mcpsync.client.subscriptions import Subscription
from mcpsync.exceptions import (ClientClosed, InvalidParams, McpError, ProtocolError, ServerError, TaskCancelled,
                                TaskFailed, TaskNotFound)
from mcpsync.rpc.deadline import Deadline
from mcpsync.types.tasks import TASK_STATUSES, TASKS_EXTENSION_ID, DetailedTask

if TYPE_CHECKING:
    from mcpsync.client.connection import Connection
    from mcpsync.client.listeners import Handle

__all__ = ["StatusCallback", "TaskHandle", "completed", "created", "follow_task", "legacy_task", "short_id"]

log = logging.getLogger(__name__)

#: ``on_status`` callbacks: ``fn(task)``, run on the dispatcher thread.
StatusCallback = Callable[[DetailedTask], Any]
#: Poll interval when the server suggests none, seconds.
DEFAULT_POLL_INTERVAL = 1.0
#: Bounds on the poll interval a server may ask for, seconds (a zero would spin,
#: an hour would outlive most callers' patience between status callbacks).
MIN_POLL_INTERVAL = 0.05
MAX_POLL_INTERVAL = 30.0
_LEGACY_STATUS = "notifications/tasks/status"
_MODERN_STATUS = "notifications/tasks"
#: Bound on waiting for a server to acknowledge a task's notification stream, seconds.
LISTEN_ACK_TIMEOUT = 2.0


def legacy_task(task: types.Task) -> DetailedTask:
    """A 2025-11-25 task in the shape of the extension's (``ttl`` -> ``ttl_ms`` ...)."""
    return DetailedTask(task.task_id, task.status, created_at=task.created_at, last_updated_at=task.last_updated_at,
                        ttl_ms=task.ttl, poll_interval_ms=task.poll_interval, status_message=task.status_message,
                        meta=task.meta)


def completed(result: dict[str, Any]) -> DetailedTask:
    """The state of a call the server answered at once instead of making it a task."""
    return DetailedTask("", "completed", result=result, result_type="complete")


class TaskHandle:
    """A tool call running as a task on the server, known by its id.

    Get one from :meth:`mcpsync.Client.start_tool_task` or, with only the id
    (stored in a database, passed to a worker), from
    :meth:`mcpsync.Client.task`.  Every method is blocking and bounded by its
    ``timeout``; a handle may be used from any thread::

        handle = client.start_tool_task("build_report", {"year": 2026})
        save(handle.task_id)                   # a web view returns here
        ...
        result = client.task(task_id).wait(timeout=600)   # a worker, later

    When the server chose to answer the call at once, the handle is already
    complete: :attr:`task_id` is ``None`` and :meth:`wait` returns the result.
    """

    def __init__(self, client: Core, task_id: str | None, *, state: DetailedTask | None = None,
                 on_status: StatusCallback | None = None) -> None:
        self._client = client
        self._id = task_id
        self._state = state
        self._on_status = on_status
        self._lock = threading.Lock()
        self._answered: set[str] = set()
        #: The events of this handle's wait() loops: cancel() wakes them.
        self._waiting = TaskWaiters()

    def __repr__(self) -> str:
        status = self._state.status if self._state is not None else "unknown"
        return f"<TaskHandle {short_id(self._id)} {status}>"

    @property
    def task_id(self) -> str | None:
        """The server's id for the task; ``None`` when the call was not run as a task."""
        return self._id

    @property
    def state(self) -> DetailedTask | None:
        """The last state seen (``None`` before the first poll of a handle made from an id)."""
        return self._state

    # -- one round trip each ---------------------------------------------------

    def status(self, *, timeout: TimeoutArg = DEFAULT) -> DetailedTask:
        """Ask the server for the task's state now (``tasks/get``).

        :raises TaskNotFound: the server knows no such task (never had it, or
            it expired).
        """
        if self._id is None:
            assert self._state is not None
            return self._state
        return self._observe(self._fetch(self._client._options.deadline(timeout)))

    def cancel(self, *, timeout: TimeoutArg = DEFAULT) -> None:
        """Ask the server to cancel the task (``tasks/cancel``).

        Cancellation is cooperative: the server acknowledges it, but the task
        may still finish; a :meth:`wait` in progress sees whichever happens.
        Cancelling a finished task is up to the server (it may answer with an
        error).
        """
        if self._id is None:
            return
        deadline = self._client._options.deadline(timeout)
        conn = self._client._connection(deadline)
        raw = self._call(conn, "tasks/cancel", {}, deadline)
        if conn.era == "legacy" and "taskId" in raw:
            self._observe(legacy_task(types.from_wire(types.Task, raw)))
        self._waiting.wake_all()

    # -- waiting ---------------------------------------------------------------

    def wait(self, timeout: TimeoutArg = DEFAULT, *, poll_interval: float | None = None) -> types.CallToolResult:
        """Block until the task ends; return the tool's result.

        Polls ``tasks/get`` at the interval the server suggests (or
        *poll_interval* seconds), answers input requests with the client's
        handlers on the way, and gives up when *timeout* (the client's default
        when left out; ``None`` waits as long as it takes) runs out.  The task
        itself keeps running after a timeout: wait again, or :meth:`cancel`.

        :raises RequestTimeout: the task did not end in time.
        :raises TaskFailed: the task ended with a JSON-RPC error (its
            ``code``, ``message`` and ``data``).
        :raises TaskCancelled: the task was cancelled.
        :raises TaskNotFound: the server knows no such task.
        :raises ClientClosed: the client was closed meanwhile (within ~1 s).
        """
        deadline = self._client._options.deadline(timeout)
        state = self._state
        if self._id is None:
            assert state is not None
            return self._outcome(state)
        conn = self._client._connection(deadline)
        wake = threading.Event()
        self._waiting.add(wake)
        self._client._task_waiters.add(wake)
        listener: Handle | None = None
        stream: Subscription | None = None
        listened = False
        try:
            while True:
                state = self._observe(self._fetch(deadline))
                if conn.era == "legacy" and (state.terminal or state.status == "input_required"):
                    return self._legacy_result(conn, state, deadline)
                if state.terminal:
                    return self._outcome(state)
                if state.status == "input_required" and self._answer(conn, state, deadline):
                    continue  # the answers may have moved it on: look again at once
                if not listened:
                    # Only for a task that is still running; then look once more, in case it
                    # changed before the server started pushing.
                    listened = True
                    listener, stream = self._listen(conn, wake, deadline)
                    if stream is not None:
                        continue
                self._sleep(wake, self._interval(state, poll_interval), deadline)
        finally:
            if stream is not None:
                stream.close()
            if listener is not None:
                listener.remove()
            self._client._task_waiters.discard(wake)
            self._waiting.discard(wake)

    def _listen(self, conn: Connection, wake: threading.Event,
                deadline: Deadline) -> tuple[Handle | None, Subscription | None]:
        """Have status pushes wake the poll loop at once, where the server sends them.

        A 2025-11-25 server sends ``notifications/tasks/status`` on its own.  A
        2026-07-28 server sends ``notifications/tasks`` only on a
        ``subscriptions/listen`` stream that names the task; one that does not
        agree (or does not serve ``subscriptions/listen``) is simply polled.
        """
        if conn.era == "legacy":
            return self._client.on(_LEGACY_STATUS, lambda params: self._pushed(params, wake)), None
        listener = self._client.on(_MODERN_STATUS, lambda params: self._pushed(params, wake))
        stream = Subscription(types.SubscriptionFilter(extra={"taskIds": [self._id]}),
                              on_close=conn.remove_subscription, queue_notifications=False)
        try:
            # The extension must be declared on this request too, or the server answers -32021.
            conn.listen(stream, Deadline(deadline.remaining(LISTEN_ACK_TIMEOUT)),
                        request_meta(conn, {TASKS_EXTENSION_ID: {}}))
        except McpError as exc:
            log.debug("task %s: no notification stream (%s); polling", short_id(self._id), exc)
            listener.remove()
            return None, None
        agreed = (stream.acknowledged or {}).get("taskIds")
        if not isinstance(agreed, list) or self._id not in agreed:
            stream.close()
            listener.remove()
            return None, None
        return listener, stream

    def _sleep(self, wake: threading.Event, interval: float, deadline: Deadline) -> None:
        deadline.check(f"task {short_id(self._id)} did not finish", "tasks/get")
        wake.wait(deadline.remaining(interval))
        wake.clear()
        if self._client.closed:
            raise ClientClosed("client was closed while waiting for a task")

    @staticmethod
    def _interval(state: DetailedTask, override: float | None) -> float:
        if override is not None:
            return max(MIN_POLL_INTERVAL, override)
        suggested = state.poll_interval_ms
        if suggested is None or isinstance(suggested, bool) or suggested < 0:
            return DEFAULT_POLL_INTERVAL
        return min(MAX_POLL_INTERVAL, max(MIN_POLL_INTERVAL, suggested / 1000.0))

    def _pushed(self, params: dict[str, Any], wake: threading.Event) -> None:
        if params.get("taskId") == self._id:
            wake.set()

    # -- the wire ----------------------------------------------------------------

    def _call(self, conn: Connection, method: str, params: dict[str, Any], deadline: Deadline) -> dict[str, Any]:
        body: dict[str, Any] = {"taskId": self._id, **params}
        meta = request_meta(conn, {TASKS_EXTENSION_ID: {}})
        if meta:
            body["_meta"] = meta
        try:
            return self._client._call(method, body, deadline, rounds=False)
        except InvalidParams as exc:
            # -32602 is what the spec prescribes for an unknown or expired task id.
            raise TaskNotFound(exc.code, exc.message, exc.data, task_id=self._id or "") from None

    def _fetch(self, deadline: Deadline) -> DetailedTask:
        conn = self._client._connection(deadline)
        raw = self._call(conn, "tasks/get", {}, deadline)
        if conn.era == "legacy":
            state = legacy_task(types.from_wire(types.GetTaskResult, raw))
        else:
            state = types.from_wire(DetailedTask, raw)
        if state.task_id != self._id:
            raise ProtocolError(f"tasks/get for task {short_id(self._id)} answered about another task")
        if state.status not in TASK_STATUSES:
            raise ProtocolError(f"task {short_id(self._id)} has an unknown status {state.status[:40]!r}")
        return state

    def _observe(self, state: DetailedTask) -> DetailedTask:
        old = self._state
        self._state = state
        changed = old is None or (old.status, old.status_message) != (state.status, state.status_message)
        if changed and self._on_status is not None:
            self._client._connection().notifications.submit(self._on_status, state)
        return state

    def _answer(self, conn: Connection, state: DetailedTask, deadline: Deadline) -> bool:
        """Answer the input requests not answered yet (``tasks/update``); False if none."""
        with self._lock:
            fresh = {k: r for k, r in (state.input_requests or {}).items() if k not in self._answered}
            self._answered.update(fresh)
        if not fresh:
            return False
        try:
            # The same handlers and workers as MRTR and legacy server requests.
            responses = answer_inputs(conn, "tasks/update", fresh, deadline)
            self._call(conn, "tasks/update", {"inputResponses": responses}, deadline)
        except BaseException:
            with self._lock:
                self._answered.difference_update(fresh)  # not delivered: a later wait() asks again
            raise
        return True

    def _legacy_result(self, conn: Connection, state: DetailedTask, deadline: Deadline) -> types.CallToolResult:
        """``tasks/result``: blocks until the task ends; the server's input requests arrive meanwhile."""
        if state.status == "cancelled":
            return self._outcome(state)
        try:
            raw = self._call(conn, "tasks/result", {}, deadline)
        except TaskNotFound:
            raise
        except ServerError as exc:
            failed = DetailedTask(state.task_id, "failed", error={"code": exc.code, "message": exc.message})
            self._observe(failed)
            raise TaskFailed(exc.code, exc.message, exc.data, task=failed) from None
        if state.status != "completed":
            self._observe(DetailedTask(state.task_id, "completed", result=raw))
        return types.from_wire(types.CallToolResult, raw)

    def _outcome(self, state: DetailedTask) -> types.CallToolResult:
        if state.status == "completed":
            if state.result is None:
                raise ProtocolError(f"task {short_id(state.task_id)} completed without a result")
            return types.from_wire(types.CallToolResult, state.result)
        if state.status == "cancelled":
            reason = f": {state.status_message}" if state.status_message else ""
            raise TaskCancelled(f"task {short_id(state.task_id)} was cancelled{reason}", task=state)
        error = state.error or {}
        code = error.get("code")
        message = error.get("message")
        raise TaskFailed(code if isinstance(code, int) and not isinstance(code, bool) else -32603,
                         message if isinstance(message, str) else (state.status_message or "task failed"),
                         error.get("data"), task=state)


def created(client: Core, state: DetailedTask, on_status: StatusCallback | None = None) -> TaskHandle:
    """The handle of a task ``tools/call`` just created, in *state*."""
    if not state.task_id:
        raise ProtocolError("tools/call: the server created a task with an empty taskId")
    handle = TaskHandle(client, state.task_id, on_status=on_status)
    handle._observe(state)
    return handle


def follow_task(client: Core, raw: dict[str, Any], deadline: Deadline) -> types.CallToolResult:
    """Wait for a task a plain ``call_tool`` got back (the tasks extension turned on for all
    requests): the caller asked for a result, so it gets one, by its own *deadline*."""
    return created(client, types.from_wire(DetailedTask, raw)).wait(deadline)


def short_id(task_id: str | None) -> str:
    """A task id for messages and logs: its first characters only.

    A server may use task ids as bearer credentials for the task's state
    (SEP-2663, *Security considerations*), so the whole id never goes into a
    log line or an exception text; it stays in the ``task_id`` attributes.
    """
    if task_id is None:
        return "(none)"
    return repr(task_id if len(task_id) <= 8 else task_id[:6] + "...")

