"""Logging: ``logging/setLevel`` and ``notifications/message``.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any

import attrs

from . import protocol as _protocol
from ._base import WireObject

__all__ = ["LoggingLevel", "LoggingMessageNotificationParams", "SetLevelRequestParams"]


#: Severity of a log message, as in RFC 5424 (syslog); defined in :mod:`.protocol`.
LoggingLevel = _protocol.LoggingLevel


@attrs.define(repr=False, eq=False)
class SetLevelRequestParams(WireObject):
    """The ``params`` of ``logging/setLevel``."""

    level: LoggingLevel
    meta: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class LoggingMessageNotificationParams(WireObject):
    """A log message from the server (``notifications/message``)."""

    level: LoggingLevel
    #: Any JSON value: a string or an object.
    data: Any
    #: Name of the logger that issued the message.
    logger: str | None = None
    meta: dict[str, Any] | None = None
