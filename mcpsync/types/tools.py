"""Tools: ``tools/list`` and ``tools/call``.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any

import attrs

from ..exceptions import ToolError, excerpt
from ._base import MetaObject, WireObject
from ._task_metadata import TaskMetadata
from .apps import ToolUi, tool_ui
from .content import ContentBlock, TextContent
from .lifecycle import Icon

__all__ = [
    "CallToolRequestParams", "CallToolResult", "ListToolsResult", "Tool", "ToolAnnotations", "ToolChoice",
    "ToolExecution"
]


@attrs.define(repr=False, eq=False)
class ToolAnnotations(WireObject):
    """Hints about a tool's behaviour; untrusted unless the server is trusted."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


@attrs.define(repr=False, eq=False)
class ToolExecution(WireObject):
    """How a tool may be run (2025-11-25)."""

    #: ``"forbidden"``, ``"optional"`` or ``"required"``: task-augmented calls.
    task_support: str | None = None


@attrs.define(repr=False, eq=False)
class Tool(MetaObject):
    """A tool the server offers.

    ::

        for tool in client.list_tools():
            print(tool.name, tool.input_schema.get("properties"))
    """

    name: str
    #: JSON Schema of the ``arguments`` object.
    input_schema: dict[str, Any]
    description: str | None = None
    title: str | None = None
    #: JSON Schema of ``structured_content`` in the result (2025-06-18+).
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: list[Icon] | None = None
    execution: ToolExecution | None = None

    @property
    def ui(self) -> ToolUi | None:
        """Its MCP Apps ``_meta.ui`` (UI resource, visibility); ``None`` when it has none."""
        return tool_ui(self.meta)


@attrs.define(repr=False, eq=False)
class ListToolsResult(MetaObject):
    """One page of ``tools/list``."""

    tools: list[Tool] = attrs.field(factory=list)
    #: Pass to the next request to get the next page; ``None`` on the last page.
    next_cursor: str | None = None


@attrs.define(repr=False, eq=False)
class CallToolRequestParams(MetaObject):
    """The ``params`` of ``tools/call``."""

    name: str
    arguments: dict[str, Any] | None = None
    #: Ask for a task-augmented call (2025-11-25).
    task: TaskMetadata | None = None


@attrs.define(repr=False, eq=False)
class CallToolResult(MetaObject):
    """The result of ``tools/call``.

    ``is_error`` is data, not an exception; call :meth:`raise_for_error` to
    opt into :class:`mcpsync.ToolError`. ::

        result = client.call_tool("add", {"a": 1, "b": 2})
        result.raise_for_error()
        print(result.text)
    """

    #: The content blocks (empty when the server sent none).
    content: list[ContentBlock] = attrs.field(factory=list)
    #: Structured output matching the tool's ``output_schema`` (usually a dict).
    structured_content: Any = None
    #: ``True`` when the tool reported an error.
    is_error: bool | None = None

    @property
    def text(self) -> str:
        """The text of every :class:`TextContent` block, joined with ``"\\n"``."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))

    def raise_for_error(self) -> None:
        """Raise :class:`mcpsync.ToolError` if the tool reported an error.

        :raises mcpsync.ToolError: when :attr:`is_error` is true; its
            ``result`` attribute is this object.
        """
        if self.is_error:
            message = excerpt(self.text, 500) if self.text else "the tool reported an error"
            raise ToolError(message, self)


@attrs.define(repr=False, eq=False)
class ToolChoice(WireObject):
    """How the model may use tools in sampling (2025-11-25)."""

    #: ``"auto"``, ``"required"`` or ``"none"``.
    mode: str | None = None



# resultType: every 2026-07-28 result carries "complete"; the converter keeps it in extra.
_RESULT_KEYS = frozenset(("content", "structuredContent", "isError", "_meta", "resultType"))
_TEXT_KEYS = frozenset(("type", "text", "_meta"))
_ABSENT: Any = object()


def call_tool_result_from_wire(raw: Any) -> CallToolResult:
    """``from_wire(CallToolResult, raw)``, with the usual shape built directly.

    Most results are a few text blocks: for those, going through the converter's
    dispatch (result, list, union, block) was a fifth of a call's client-side CPU.
    Anything else, unknown keys and malformed values included, takes the converter,
    so the outcome (and every :class:`~mcpsync.ProtocolError`) is exactly
    :func:`~mcpsync.types.from_wire`'s.
    """
    if type(raw) is dict and _RESULT_KEYS.issuperset(raw):
        # A key present with null goes to the converter, which decides (``_meta: null`` is refused).
        meta = raw.get("_meta", _ABSENT)
        is_error = raw.get("isError", _ABSENT)
        content = raw.get("content", _ABSENT)
        if content is _ABSENT:
            content = []  # the field's default: no blocks
        if (
            (meta is _ABSENT or type(meta) is dict)
            and (is_error is _ABSENT or type(is_error) is bool)
            and type(content) is list
        ):
            blocks: list[ContentBlock] = []
            for item in content:
                if (
                    type(item) is not dict
                    or item.get("type") != "text"
                    or type(item.get("text")) is not str
                    or not _TEXT_KEYS.issuperset(item)
                ):
                    break
                block_meta = item.get("_meta", _ABSENT)
                if block_meta is _ABSENT:
                    blocks.append(TextContent(item["text"]))
                elif type(block_meta) is dict:
                    blocks.append(TextContent(item["text"], meta=block_meta))
                else:
                    break
            else:
                kind = raw.get("resultType", _ABSENT)
                return CallToolResult(
                    blocks,
                    raw.get("structuredContent"),
                    None if is_error is _ABSENT else is_error,
                    meta=None if meta is _ABSENT else meta,
                    extra={} if kind is _ABSENT else {"resultType": kind},
                )
    from ._converter import from_wire

    return from_wire(CallToolResult, raw)
