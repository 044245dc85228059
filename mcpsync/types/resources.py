"""Resources: ``resources/list``, ``resources/templates/list``, ``resources/read``.

.. versionadded:: 0.1
"""

from __future__ import annotations

import attrs

from ._base import MetaObject
from .content import Annotations, ResourceContents
from .lifecycle import Icon

__all__ = ["ResourceUpdatedNotificationParams", "ListResourceTemplatesResult", "ListResourcesResult",
           "ReadResourceRequestParams", "ReadResourceResult", "Resource", "ResourceTemplate", "SubscribeRequestParams",
           "UnsubscribeRequestParams"]


@attrs.define(repr=False, eq=False)
class Resource(MetaObject):
    """A resource the server can read. ``Resource("file:///a.txt", "a.txt")``."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    #: Size in bytes before encoding, if known.
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None


@attrs.define(repr=False, eq=False)
class ListResourcesResult(MetaObject):
    """One page of ``resources/list``."""

    resources: list[Resource] = attrs.field(factory=list)
    next_cursor: str | None = None


@attrs.define(repr=False, eq=False)
class ResourceTemplate(MetaObject):
    """A family of resources described by an RFC 6570 URI template."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None


@attrs.define(repr=False, eq=False)
class ListResourceTemplatesResult(MetaObject):
    """One page of ``resources/templates/list``."""

    resource_templates: list[ResourceTemplate] = attrs.field(factory=list)
    next_cursor: str | None = None


@attrs.define(repr=False, eq=False)
class ReadResourceRequestParams(MetaObject):
    """The ``params`` of ``resources/read``."""

    uri: str


@attrs.define(repr=False, eq=False)
class ReadResourceResult(MetaObject):
    """The result of ``resources/read``.

    ::

        for part in client.read_resource("file:///a.txt").contents:
            print(part.text if isinstance(part, TextResourceContents) else part.blob)
    """

    #: :class:`TextResourceContents` and :class:`BlobResourceContents` items.
    contents: list[ResourceContents] = attrs.field(factory=list)


@attrs.define(repr=False, eq=False)
class SubscribeRequestParams(MetaObject):
    """The ``params`` of ``resources/subscribe``."""

    uri: str


@attrs.define(repr=False, eq=False)
class UnsubscribeRequestParams(MetaObject):
    """The ``params`` of ``resources/unsubscribe``."""

    uri: str


@attrs.define(repr=False, eq=False)
class ResourceUpdatedNotificationParams(MetaObject):
    """A subscribed resource changed (``notifications/resources/updated``)."""

    uri: str
