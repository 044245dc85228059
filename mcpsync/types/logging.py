"""Logging: ``logging/setLevel`` and ``notifications/message``.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any

import attrs

from . import protocol as _protocol
from ._base import MetaObject

__all__ = ["LoggingLevel", "LoggingMessageNotificationParams", "SetLevelRequestParams"]


#: Severity of a log message, as in RFC 5424 (syslog); defined in :mod:`.protocol`.
LoggingLevel = _protocol.LoggingLevel


@attrs.define(repr=False, eq=False)
class SetLevelRequestParams(MetaObject):
    """The ``params`` of ``logging/setLevel``."""

    level: LoggingLevel


@attrs.define(repr=False, eq=False)
class LoggingMessageNotificationParams(MetaObject):
    """A log message from the server (``notifications/message``)."""

    level: LoggingLevel
    #: Any JSON value: a string or an object.
    data: Any
    #: Name of the logger that issued the message.
    logger: str | None = None
