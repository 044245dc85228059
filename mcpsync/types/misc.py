"""Roots, logging, completion, progress, cancellation, pagination and tasks.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from . import _converter
from . import protocol as _protocol
from ._base import WireObject
from ._task_metadata import TaskMetadata

__all__ = [
    "CancelledNotificationParams",
    "CompleteRequestParams",
    "CompleteResult",
    "Completion",
    "CompletionArgument",
    "CompletionContext",
    "CompletionReference",
    "CreateTaskResult",
    "EmptyResult",
    "GetTaskResult",
    "ListRootsResult",
    "ListTasksResult",
    "LoggingLevel",
    "LoggingMessageNotificationParams",
    "NotificationParams",
    "PaginatedRequestParams",
    "ProgressNotificationParams",
    "ProgressToken",
    "PromptReference",
    "RequestId",
    "RequestParams",
    "ResourceReference",
    "ResourceTemplateReference",
    "ResourceUpdatedNotificationParams",
    "Root",
    "SetLevelRequestParams",
    "Task",
    "TaskMetadata",
    "TaskStatusNotificationParams",
]

#: A JSON-RPC request id.
RequestId = str | int
#: A progress token: chosen by the requester, echoed in progress notifications.
ProgressToken = str | int
#: Severity of a log message, as in RFC 5424 (syslog); defined in :mod:`.protocol`.
LoggingLevel = _protocol.LoggingLevel


@attrs.define(repr=False, eq=False)
class EmptyResult(WireObject):
    """A result with no content, e.g. the answer to ``ping``."""

    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class RequestParams(WireObject):
    """The ``params`` of a request that takes no arguments (``ping``, ``roots/list``)."""

    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class NotificationParams(WireObject):
    """The ``params`` of a notification with no arguments (``*/list_changed``)."""

    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class PaginatedRequestParams(WireObject):
    """The ``params`` of a ``*/list`` request."""

    #: The ``next_cursor`` of the previous page; ``None`` for the first page.
    cursor: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class Root(WireObject):
    """A directory or file the server may work in. ``Root("file:///home/me/project")``."""

    #: A ``file://`` URI.
    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class ListRootsResult(WireObject):
    """The client's answer to ``roots/list``."""

    roots: list[Root] = attrs.field(factory=list)
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class SetLevelRequestParams(WireObject):
    """The ``params`` of ``logging/setLevel``."""

    level: LoggingLevel
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class LoggingMessageNotificationParams(WireObject):
    """A log message from the server (``notifications/message``)."""

    level: LoggingLevel
    #: Any JSON value: a string or an object.
    data: Any
    #: Name of the logger that issued the message.
    logger: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class ProgressNotificationParams(WireObject):
    """Progress of a long-running request (``notifications/progress``)."""

    progress_token: ProgressToken
    #: Increases with every notification, even if ``total`` is unknown.
    progress: float
    total: float | None = None
    message: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class CancelledNotificationParams(WireObject):
    """A request was cancelled (``notifications/cancelled``)."""

    #: The id of the cancelled request (absent only for task cancellation).
    request_id: RequestId | None = None
    reason: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class ResourceUpdatedNotificationParams(WireObject):
    """A subscribed resource changed (``notifications/resources/updated``)."""

    uri: str
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class PromptReference(WireObject):
    """Completion target: a prompt. ``PromptReference("greeting")``."""

    name: str
    type: Literal["ref/prompt"] = attrs.field(default="ref/prompt", init=False)
    title: str | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class ResourceTemplateReference(WireObject):
    """Completion target: a resource template. ``ResourceTemplateReference("file:///{path}")``."""

    #: The URI or URI template.
    uri: str
    type: Literal["ref/resource"] = attrs.field(default="ref/resource", init=False)
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


#: The name of :class:`ResourceTemplateReference` before 2025-06-18.
ResourceReference = ResourceTemplateReference

#: What ``completion/complete`` completes, told apart by ``type``.
CompletionReference = PromptReference | ResourceTemplateReference


@attrs.define(repr=False, eq=False)
class CompletionArgument(WireObject):
    """The argument being completed."""

    name: str
    value: str
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class CompletionContext(WireObject):
    """Already-resolved arguments, to help the server complete (2025-06-18+)."""

    arguments: dict[str, str] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class CompleteRequestParams(WireObject):
    """The ``params`` of ``completion/complete``."""

    ref: CompletionReference
    argument: CompletionArgument
    context: CompletionContext | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class Completion(WireObject):
    """Completion values for an argument (at most 100)."""

    values: list[str] = attrs.field(factory=list)
    #: Total number of options, which may exceed ``len(values)``.
    total: int | None = None
    #: More options exist beyond ``values``.
    has_more: bool | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.define(repr=False, eq=False)
class CompleteResult(WireObject):
    """The result of ``completion/complete``."""

    completion: Completion
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


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


_converter.converter.register_structure_hook(
    CompletionReference, _converter.tagged_union_hook(CompletionReference, "type")
)
