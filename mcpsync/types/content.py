"""Content blocks: what tools return, prompts contain and sampling exchanges.

Blocks are told apart by their ``type`` key. A block whose ``type`` this version
does not know becomes :class:`UnknownContent`, which keeps every key and is
sent back verbatim, so a newer server never breaks an older client.

The ``type`` attribute of each class is fixed (``init=False``): it is never
passed by hand. ::

    TextContent("hello")
    EmbeddedResource(TextResourceContents("file:///a.txt", "text"))

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from . import _converter
from ._base import MetaObject, WireObject
from .lifecycle import Icon

__all__ = ["Annotations", "AudioContent", "BlobResourceContents", "ContentBlock", "EmbeddedResource", "ImageContent",
           "ResourceContents", "ResourceLink", "Role", "SamplingContent", "TextContent", "TextResourceContents",
           "ToolResultContent", "ToolUseContent", "UnknownContent"]

#: The sender or recipient of a message.
Role = Literal["user", "assistant"]


@attrs.define(repr=False, eq=False)
class Annotations(WireObject):
    """Hints about how a client should use or display an object."""

    #: Who the object is meant for.
    audience: list[Role] | None = None
    #: 0.0 (least) to 1.0 (most important).
    priority: float | None = None
    #: ISO 8601 timestamp of the last modification (2025-06-18+).
    last_modified: str | None = None


@attrs.define(repr=False, eq=False)
class TextContent(MetaObject):
    """Plain text. ``TextContent("hi")``."""

    text: str
    type: Literal["text"] = attrs.field(default="text", init=False)
    annotations: Annotations | None = None


@attrs.define(repr=False, eq=False)
class ImageContent(MetaObject):
    """An image: base64 ``data`` and its ``mime_type``."""

    data: str
    mime_type: str
    type: Literal["image"] = attrs.field(default="image", init=False)
    annotations: Annotations | None = None


@attrs.define(repr=False, eq=False)
class AudioContent(MetaObject):
    """Audio: base64 ``data`` and its ``mime_type`` (2025-03-26+)."""

    data: str
    mime_type: str
    type: Literal["audio"] = attrs.field(default="audio", init=False)
    annotations: Annotations | None = None


@attrs.define(repr=False, eq=False)
class ResourceLink(MetaObject):
    """A link to a resource the client may read (2025-06-18+)."""

    uri: str
    name: str
    type: Literal["resource_link"] = attrs.field(default="resource_link", init=False)
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    #: Size in bytes before encoding, if known.
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None


@attrs.define(repr=False, eq=False)
class TextResourceContents(MetaObject):
    """The contents of a text resource."""

    uri: str
    text: str
    mime_type: str | None = None


@attrs.define(repr=False, eq=False)
class BlobResourceContents(MetaObject):
    """The contents of a binary resource; ``blob`` is base64."""

    uri: str
    blob: str
    mime_type: str | None = None


#: Resource contents, told apart by the ``text`` or ``blob`` key.
ResourceContents = TextResourceContents | BlobResourceContents


@attrs.define(repr=False, eq=False)
class EmbeddedResource(MetaObject):
    """A resource embedded in a message or tool result."""

    resource: ResourceContents
    type: Literal["resource"] = attrs.field(default="resource", init=False)
    annotations: Annotations | None = None


@attrs.define(repr=False, eq=False)
class UnknownContent(WireObject):
    """A content block of a ``type`` this version does not know.

    Every key other than ``type`` is in :attr:`extra`; the block is sent back
    exactly as received.
    """

    type: str


#: A block in a tool result, prompt message or embedded tool result.
ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource | UnknownContent


@attrs.define(repr=False, eq=False)
class ToolUseContent(MetaObject):
    """A model's request to call a tool, in sampling (2025-11-25)."""

    id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_use"] = attrs.field(default="tool_use", init=False)


@attrs.define(repr=False, eq=False)
class ToolResultContent(MetaObject):
    """The result of a tool call, sent back to the model in sampling (2025-11-25)."""

    tool_use_id: str
    content: list[ContentBlock] = attrs.field(factory=list)
    type: Literal["tool_result"] = attrs.field(default="tool_result", init=False)
    structured_content: Any = None
    is_error: bool | None = None


#: A block in a sampling message.
SamplingContent = TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent | UnknownContent


# Registered here, not in _converter: this module may be loaded long after it.
_converter.register_union(ContentBlock, fallback=UnknownContent)
_converter.register_union(SamplingContent, fallback=UnknownContent)
_converter.register_union(ResourceContents, keys={"text": TextResourceContents, "blob": BlobResourceContents})
