"""Prompts: ``prompts/list`` and ``prompts/get``.

.. versionadded:: 0.1
"""

from __future__ import annotations

import attrs

from ._base import MetaObject, WireObject
from .content import ContentBlock, Role
from .lifecycle import Icon

__all__ = ["GetPromptRequestParams", "GetPromptResult", "ListPromptsResult", "Prompt", "PromptArgument",
           "PromptMessage"]


@attrs.define(repr=False, eq=False)
class PromptArgument(WireObject):
    """An argument a prompt template accepts."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


@attrs.define(repr=False, eq=False)
class Prompt(MetaObject):
    """A prompt or prompt template the server offers."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None


@attrs.define(repr=False, eq=False)
class ListPromptsResult(MetaObject):
    """One page of ``prompts/list``."""

    prompts: list[Prompt] = attrs.field(factory=list)
    next_cursor: str | None = None


@attrs.define(repr=False, eq=False)
class GetPromptRequestParams(MetaObject):
    """The ``params`` of ``prompts/get``."""

    name: str
    arguments: dict[str, str] | None = None


@attrs.define(repr=False, eq=False)
class PromptMessage(WireObject):
    """One message of a prompt."""

    role: Role
    content: ContentBlock


@attrs.define(repr=False, eq=False)
class GetPromptResult(MetaObject):
    """The result of ``prompts/get``: ``.messages`` is the list of :class:`PromptMessage`."""

    messages: list[PromptMessage] = attrs.field(factory=list)
    description: str | None = None
