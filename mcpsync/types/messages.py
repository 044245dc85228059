"""The shapes every message shares: request ids, empty results, the ``_meta`` of request and
notification params, and pagination.

.. versionadded:: 0.1
"""

from __future__ import annotations

import attrs

from ._base import MetaObject

__all__ = ["EmptyResult", "NotificationParams", "PaginatedRequestParams", "RequestId", "RequestParams"]


#: A JSON-RPC request id.
RequestId = str | int


@attrs.define(repr=False, eq=False)
class EmptyResult(MetaObject):
    """A result with no content, e.g. the answer to ``ping``."""



@attrs.define(repr=False, eq=False)
class RequestParams(MetaObject):
    """The ``params`` of a request that takes no arguments (``ping``, ``roots/list``)."""



@attrs.define(repr=False, eq=False)
class NotificationParams(MetaObject):
    """The ``params`` of a notification with no arguments (``*/list_changed``)."""



@attrs.define(repr=False, eq=False)
class PaginatedRequestParams(MetaObject):
    """The ``params`` of a ``*/list`` request."""

    #: The ``next_cursor`` of the previous page; ``None`` for the first page.
    cursor: str | None = None
