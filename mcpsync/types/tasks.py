"""Tasks in the 2025-11-25 in-core form: a task-augmented request answers at once with a task,
polled with ``tasks/get`` and read with ``tasks/result``.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any

import attrs

from ._base import WireObject
from ._task_metadata import TaskMetadata

__all__ = [
    "CreateTaskResult",
    "GetTaskResult",
    "ListTasksResult",
    "Task",
    "TaskMetadata",
    "TaskStatusNotificationParams",
]


@attrs.define(repr=False, eq=False)
class Task(WireObject):
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
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class GetTaskResult(Task):
    """The result of ``tasks/get`` (and of ``tasks/cancel``): a task."""


@attrs.define(repr=False, eq=False)
class TaskStatusNotificationParams(Task):
    """A task changed status (``notifications/tasks/status``)."""


@attrs.define(repr=False, eq=False)
class CreateTaskResult(WireObject):
    """The answer to a task-augmented request (2025-11-25)."""

    task: Task
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class ListTasksResult(WireObject):
    """One page of ``tasks/list``."""

    tasks: list[Task] = attrs.field(factory=list)
    next_cursor: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)
