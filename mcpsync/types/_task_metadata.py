"""``TaskMetadata``, in a module of its own (re-exported by :mod:`.tasks`).

Tools, sampling and elicitation requests carry it; keeping it out of
``tasks`` means a client that only lists and calls tools never builds the ~25
classes there.
"""

from __future__ import annotations

import attrs

from ._base import WireObject

__all__ = ["TaskMetadata"]


@attrs.define(repr=False, eq=False)
class TaskMetadata(WireObject):
    """Asks for a task-augmented request (2025-11-25)."""

    #: Requested lifetime of the task, in milliseconds.
    ttl: int | None = None
