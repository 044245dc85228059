"""Completion: argument suggestions for prompts and resource templates (``completion/complete``).

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Literal

import attrs

from . import _converter
from ._base import MetaObject, WireObject

__all__ = ["CompleteRequestParams", "CompleteResult", "Completion", "CompletionArgument", "CompletionContext",
           "CompletionReference", "PromptReference", "ResourceReference", "ResourceTemplateReference"]


@attrs.define(repr=False, eq=False)
class PromptReference(WireObject):
    """Completion target: a prompt. ``PromptReference("greeting")``."""

    name: str
    type: Literal["ref/prompt"] = attrs.field(default="ref/prompt", init=False)
    title: str | None = None


@attrs.define(repr=False, eq=False)
class ResourceTemplateReference(WireObject):
    """Completion target: a resource template. ``ResourceTemplateReference("file:///{path}")``."""

    #: The URI or URI template.
    uri: str
    type: Literal["ref/resource"] = attrs.field(default="ref/resource", init=False)


#: The name of :class:`ResourceTemplateReference` before 2025-06-18.
ResourceReference = ResourceTemplateReference


#: What ``completion/complete`` completes, told apart by ``type``.
CompletionReference = PromptReference | ResourceTemplateReference


@attrs.define(repr=False, eq=False)
class CompletionArgument(WireObject):
    """The argument being completed."""

    name: str
    value: str


@attrs.define(repr=False, eq=False)
class CompletionContext(WireObject):
    """Already-resolved arguments, to help the server complete (2025-06-18+)."""

    arguments: dict[str, str] | None = None


@attrs.define(repr=False, eq=False)
class CompleteRequestParams(MetaObject):
    """The ``params`` of ``completion/complete``."""

    ref: CompletionReference
    argument: CompletionArgument
    context: CompletionContext | None = None


@attrs.define(repr=False, eq=False)
class Completion(WireObject):
    """Completion values for an argument (at most 100)."""

    values: list[str] = attrs.field(factory=list)
    #: Total number of options, which may exceed ``len(values)``.
    total: int | None = None
    #: More options exist beyond ``values``.
    has_more: bool | None = None


@attrs.define(repr=False, eq=False)
class CompleteResult(MetaObject):
    """The result of ``completion/complete``."""

    completion: Completion


_converter.register_union(CompletionReference)
