"""Requests in flight: progress notifications and cancellation.

.. versionadded:: 0.1
"""

from __future__ import annotations

import attrs

from ._base import MetaObject
from .messages import RequestId

__all__ = ["CancelledNotificationParams", "ProgressNotificationParams", "ProgressToken"]


#: A progress token: chosen by the requester, echoed in progress notifications.
ProgressToken = str | int


@attrs.define(repr=False, eq=False)
class ProgressNotificationParams(MetaObject):
    """Progress of a long-running request (``notifications/progress``)."""

    progress_token: ProgressToken
    #: Increases with every notification, even if ``total`` is unknown.
    progress: float
    total: float | None = None
    message: str | None = None


@attrs.define(repr=False, eq=False)
class CancelledNotificationParams(MetaObject):
    """A request was cancelled (``notifications/cancelled``)."""

    #: The id of the cancelled request (absent only for task cancellation).
    request_id: RequestId | None = None
    reason: str | None = None
