"""Tasks: long work a server runs while the client polls, in both wire forms.

* The ``io.modelcontextprotocol/tasks`` extension (SEP-2663, 2026-07-28): a server that
  negotiated it may answer ``tools/call`` with a task (``resultType: "task"``) instead of the
  tool's result; the client then polls ``tasks/get``, answers ``inputRequests`` with
  ``tasks/update`` and may send ``tasks/cancel`` (:class:`DetailedTask`,
  :class:`UpdateTaskRequestParams`).
* The 2025-11-25 in-core form: a task-augmented request answers at once with a task, polled
  with ``tasks/get`` and read with ``tasks/result`` (:class:`Task` and the results around it).
  The client turns those into a :class:`DetailedTask`, so you see one shape in both eras.

.. versionadded:: 0.1
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import attrs

from ._base import MetaObject
from ._task_metadata import TaskMetadata
from .modern import InputRequest

__all__ = ["TASKS_EXTENSION_ID", "TASK_STATUSES", "TERMINAL_STATUSES", "CreateTaskResult", "DetailedTask",
           "GetTaskResult", "ListTasksResult", "Task", "TaskMetadata", "TaskStatusNotificationParams",
           "UpdateTaskRequestParams"]

#: The extension identifier, as advertised in ``capabilities.extensions``.
TASKS_EXTENSION_ID = "io.modelcontextprotocol/tasks"
#: Every status a task can have.
TASK_STATUSES = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
#: Statuses a task never leaves.
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})


# Wire helpers shared by the client's task store and the test server's tasks (not re-exported
# by :mod:`mcpsync.types`: they build plain dicts, not types).


def task_fields(task_id: str, status: str, created: str, updated: str, message: str | None) -> dict[str, Any]:
    """The members every task carries on the wire, in both forms (timestamps from :func:`iso_now`)."""
    fields: dict[str, Any] = {"taskId": task_id, "status": status, "createdAt": created, "lastUpdatedAt": updated}
    if message:
        fields["statusMessage"] = message
    return fields


def iso_now() -> str:
    """Now, as tasks carry their timestamps (ISO 8601, UTC, milliseconds)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@attrs.define(repr=False, eq=False)
class DetailedTask(MetaObject):
    """The state of a task, as ``tasks/get`` (and ``notifications/tasks``) carry it.

    ``result`` is set when ``status == "completed"`` (the raw result of the
    original request), ``error`` (a JSON-RPC error object) when it is
    ``"failed"``, ``input_requests`` when it is ``"input_required"``.
    """

    task_id: str
    #: ``"working"``, ``"input_required"``, ``"completed"``, ``"failed"`` or ``"cancelled"``.
    status: str
    #: ISO 8601 timestamps, as the server sent them.
    created_at: str | None = None
    last_updated_at: str | None = None
    #: Lifetime from creation in milliseconds; ``None`` means unlimited (or not said).
    ttl_ms: int | None = None
    #: How often the server would like to be polled, in milliseconds.
    poll_interval_ms: int | None = None
    status_message: str | None = None
    input_requests: dict[str, InputRequest] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: ``"task"`` on the answer that created the task, ``"complete"`` on ``tasks/get``.
    result_type: str | None = None

    @property
    def terminal(self) -> bool:
        """Whether the task reached ``completed``, ``failed`` or ``cancelled``."""
        return self.status in TERMINAL_STATUSES


@attrs.define(repr=False, eq=False)
class UpdateTaskRequestParams(MetaObject):
    """The ``params`` of ``tasks/update``: answers to a task's ``inputRequests``."""

    task_id: str
    input_responses: dict[str, dict[str, Any]]


@attrs.define(repr=False, eq=False)
class Task(MetaObject):
    """The state of a task (2025-11-25)."""

    task_id: str
    #: ``"working"``, ``"input_required"``, ``"completed"``, ``"failed"``, ``"cancelled"``.
    status: str
    created_at: str
    last_updated_at: str
    #: Lifetime in milliseconds; ``None`` (sent as ``null``) means unlimited.
    ttl: int | None
    status_message: str | None = None
    poll_interval: int | None = None


@attrs.define(repr=False, eq=False)
class GetTaskResult(Task):
    """The result of ``tasks/get`` (and of ``tasks/cancel``): a task."""


@attrs.define(repr=False, eq=False)
class TaskStatusNotificationParams(Task):
    """A task changed status (``notifications/tasks/status``)."""


@attrs.define(repr=False, eq=False)
class CreateTaskResult(MetaObject):
    """The answer to a task-augmented request (2025-11-25)."""

    task: Task


@attrs.define(repr=False, eq=False)
class ListTasksResult(MetaObject):
    """One page of ``tasks/list``."""

    tasks: list[Task] = attrs.field(factory=list)
    next_cursor: str | None = None
