"""The shapes every message shares: request ids, empty results, the ``_meta`` of request and
notification params, and pagination.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any

import attrs

from ._base import WireObject

__all__ = ["EmptyResult", "NotificationParams", "PaginatedRequestParams", "RequestId", "RequestParams"]


#: A JSON-RPC request id.
RequestId = str | int


@attrs.define(repr=False, eq=False)
class EmptyResult(WireObject):
    """A result with no content, e.g. the answer to ``ping``."""

    meta: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class RequestParams(WireObject):
    """The ``params`` of a request that takes no arguments (``ping``, ``roots/list``)."""

    meta: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class NotificationParams(WireObject):
    """The ``params`` of a notification with no arguments (``*/list_changed``)."""

    meta: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class PaginatedRequestParams(WireObject):
    """The ``params`` of a ``*/list`` request."""

    #: The ``next_cursor`` of the previous page; ``None`` for the first page.
    cursor: str | None = None
    meta: dict[str, Any] | None = None
