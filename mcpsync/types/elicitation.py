"""Elicitation: the server asks the user for input (``elicitation/create``).

Form mode (``mode`` absent or ``"form"``) asks for fields described by a
restricted JSON Schema; URL mode (2025-11-25) sends the user to a URL.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from . import _converter
from ._base import MetaObject, WireObject
from ._task_metadata import TaskMetadata

__all__ = ["ElicitRequestFormParams", "ElicitRequestParams", "ElicitRequestURLParams", "ElicitResult",
           "ElicitationCompleteNotificationParams"]


@attrs.define(repr=False, eq=False)
class ElicitRequestFormParams(MetaObject):
    """Ask the user to fill in a form."""

    #: The message to show the user.
    message: str
    #: A flat JSON Schema object of primitive properties.
    requested_schema: dict[str, Any]
    #: ``"form"``, or ``None`` when the server left it out (before 2025-11-25).
    mode: Literal["form"] | None = None
    task: TaskMetadata | None = None


@attrs.define(repr=False, eq=False)
class ElicitRequestURLParams(MetaObject):
    """Ask the user to complete an interaction at a URL (2025-11-25)."""

    message: str
    url: str
    #: Correlates ``notifications/elicitation/complete`` (2025-11-25; absent in 2026-07-28).
    elicitation_id: str | None = None
    mode: Literal["url"] = attrs.field(default="url", init=False)
    task: TaskMetadata | None = None


#: The ``params`` of ``elicitation/create``, told apart by ``mode``.
ElicitRequestParams = ElicitRequestFormParams | ElicitRequestURLParams


@attrs.define(repr=False, eq=False)
class ElicitResult(MetaObject):
    """The client's answer to ``elicitation/create``.

    ::

        ElicitResult("accept", {"name": "Ada"})
        ElicitResult("decline")
    """

    action: Literal["accept", "decline", "cancel"]
    #: The submitted values (form mode with ``"accept"`` only).
    content: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class ElicitationCompleteNotificationParams(WireObject):
    """A URL-mode elicitation finished (``notifications/elicitation/complete``)."""

    elicitation_id: str


_converter.register_union(ElicitRequestParams, "mode", tags={
    None: ElicitRequestFormParams, "form": ElicitRequestFormParams, "url": ElicitRequestURLParams})
