"""Types of tasks: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663).

A server that negotiated the extension may answer ``tools/call`` with a task
(``resultType: "task"``) instead of the tool's result; the client then polls
``tasks/get``, answers ``inputRequests`` with ``tasks/update`` and may send
``tasks/cancel``.  The 2025-11-25 revision had tasks in the core protocol
with other names (``ttl``, ``pollInterval``, ``tasks/result``); its types stay
in :mod:`.misc` (:class:`~mcpsync.types.Task`), and the client turns them into
a :class:`DetailedTask` so you see one shape in both eras.

.. versionadded:: 0.2
"""

from __future__ import annotations

from typing import Any

import attrs

from ._base import WireObject
from .modern import InputRequest

__all__ = [
    "TASKS_EXTENSION_ID",
    "TASK_STATUSES",
    "TERMINAL_STATUSES",
    "DetailedTask",
    "UpdateTaskRequestParams",
]

#: The extension identifier, as advertised in ``capabilities.extensions``.
TASKS_EXTENSION_ID = "io.modelcontextprotocol/tasks"
#: Every status a task can have.
TASK_STATUSES = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
#: Statuses a task never leaves.
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})


@attrs.define(repr=False, eq=False)
class DetailedTask(WireObject):
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
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)

    @property
    def terminal(self) -> bool:
        """Whether the task reached ``completed``, ``failed`` or ``cancelled``."""
        return self.status in TERMINAL_STATUSES


@attrs.define(repr=False, eq=False)
class UpdateTaskRequestParams(WireObject):
    """The ``params`` of ``tasks/update``: answers to a task's ``inputRequests``."""

    task_id: str
    input_responses: dict[str, dict[str, Any]]
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)
