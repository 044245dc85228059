"""Sampling: the server asks the client's LLM for a completion (``sampling/createMessage``).

A message's ``content`` is one block, or (2025-11-25) a list of blocks; the
shape received is the shape kept and sent back.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from . import _converter
from ._base import MetaObject, WireObject
from ._task_metadata import TaskMetadata
from .content import Role, SamplingContent
from .tools import Tool, ToolChoice

__all__ = ["CreateMessageRequestParams", "CreateMessageResult", "ModelHint", "ModelPreferences", "SamplingMessage",
           "SamplingMessageContent"]

#: One content block or a list of them.
SamplingMessageContent = SamplingContent | list[SamplingContent]


@attrs.define(repr=False, eq=False)
class ModelHint(WireObject):
    """A hint for model selection: a (sub)string of a model name."""

    name: str | None = None


@attrs.define(repr=False, eq=False)
class ModelPreferences(WireObject):
    """The server's preferences for model selection; priorities are 0.0 to 1.0."""

    hints: list[ModelHint] | None = None
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


@attrs.define(repr=False, eq=False)
class SamplingMessage(MetaObject):
    """A message in a sampling conversation."""

    role: Role
    content: SamplingMessageContent


@attrs.define(repr=False, eq=False)
class CreateMessageRequestParams(MetaObject):
    """What the server asks for in ``sampling/createMessage``.

    The client's ``sampling_handler`` receives this and returns a
    :class:`CreateMessageResult`.
    """

    messages: list[SamplingMessage]
    max_tokens: int
    system_prompt: str | None = None
    #: ``"none"``, ``"thisServer"`` or ``"allServers"`` (soft-deprecated in 2025-11-25).
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    #: Provider-specific metadata, verbatim.
    metadata: dict[str, Any] | None = None
    model_preferences: ModelPreferences | None = None
    #: Tools the model may call (2025-11-25).
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    task: TaskMetadata | None = None


@attrs.define(repr=False, eq=False)
class CreateMessageResult(MetaObject):
    """The client's answer to ``sampling/createMessage``.

    ::

        def sampling_handler(params):
            return CreateMessageResult(TextContent("Paris"), model="my-llm")
    """

    content: SamplingMessageContent
    #: Name of the model that generated the message.
    model: str
    role: Role = "assistant"
    #: ``"endTurn"``, ``"stopSequence"``, ``"maxTokens"``, ``"toolUse"`` or other.
    stop_reason: str | None = None


_converter.register_list_or(SamplingContent, SamplingContent)
