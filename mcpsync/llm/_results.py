"""Tool results in each provider's format: what to append to the conversation.

A :class:`~mcpsync.types.CallToolResult` becomes an :class:`Outcome`: text
parts and images in order.  Images the providers accept (PNG, JPEG, GIF,
WebP) stay images; everything else the model can only read about (audio,
binary resources, resource links, unknown blocks) becomes a line of text.
Structured content is sent as JSON when the tool sent no text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Union

import attrs

from mcpsync import types

#: Image types both OpenAI and Anthropic take.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_EMPTY = "(the tool returned no content)"


@attrs.frozen
class Image:
    """A base64 image of a tool result."""

    mime_type: str
    data: str

    @property
    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{self.data}"


Part = Union[str, Image]


@attrs.frozen
class Outcome:
    """What one tool call produced, ready for any provider."""

    call_id: str
    name: str
    parts: list[Part]
    is_error: bool = False

    @classmethod
    def error(cls, call_id: str, name: str, message: str) -> Outcome:
        """A failure the model should read about (unknown tool, bad arguments, timeout...)."""
        return cls(call_id, name, [message], True)

    def text(self, image_note: str = "[image {n}: {mime}]") -> str:
        """The text parts joined (images as *image_note*); ``"Error: "`` first on a failure."""
        text = "\n".join(part if isinstance(part, str) else image_note.format(n=n, mime=part.mime_type)
                         for n, part in enumerate(self.images_and_text(), 1)) or _EMPTY
        return f"Error: {text}" if self.is_error else text

    def images_and_text(self) -> list[Part]:
        return [part for part in self.parts if not isinstance(part, str) or part]

    @property
    def images(self) -> list[Image]:
        return [part for part in self.parts if isinstance(part, Image)]


def outcome(call_id: str, name: str, result: types.CallToolResult) -> Outcome:
    """The :class:`Outcome` of a tool's result."""
    parts: list[Part] = [_part(block) for block in result.content]
    if result.structured_content is not None and not any(isinstance(b, types.TextContent) for b in result.content):
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return Outcome(call_id, name, parts, bool(result.is_error))


def _part(block: Any) -> Part:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        if block.mime_type in IMAGE_TYPES:
            return Image(block.mime_type, block.data)
        return f"[an image of type {block.mime_type}, which cannot be shown]"
    if isinstance(block, types.AudioContent):
        return f"[audio ({block.mime_type}), which cannot be played here]"
    if isinstance(block, types.ResourceLink):
        return f"[resource {block.name}: {block.uri}" + (f" ({block.mime_type})]" if block.mime_type else "]")
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return f"[resource {res.uri}]\n{res.text}"
        if res.mime_type in IMAGE_TYPES:
            return Image(str(res.mime_type), res.blob)
        return f"[binary resource {res.uri} ({res.mime_type or 'unknown type'}), not shown]"
    return f"[content of type {getattr(block, 'type', '?')}, not shown]"


def chat_results(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """OpenAI Chat Completions: a ``tool`` message per call, then one user message with the images."""
    messages: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": o.call_id, "content": o.text("[image {n}: {mime}, attached below]")}
        for o in outcomes
    ]
    images: list[dict[str, Any]] = []
    for o in outcomes:
        for n, image in enumerate(o.images, 1):
            images.append({"type": "text", "text": f"Image {n} returned by {o.name} (call {o.call_id}):"})
            images.append({"type": "image_url", "image_url": {"url": image.data_url}})
    if images:
        # Tool messages carry text only; the images follow as the user's.
        messages.append({"role": "user", "content": images})
    return messages


def responses_results(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """OpenAI Responses: a ``function_call_output`` item per call (a list when it has images)."""
    items: list[dict[str, Any]] = []
    for o in outcomes:
        output: Any = o.text()
        if o.images:
            output = [{"type": "input_text", "text": o.text("[image {n}: {mime}, below]")}] + [
                {"type": "input_image", "image_url": image.data_url} for image in o.images
            ]
        items.append({"type": "function_call_output", "call_id": o.call_id, "output": output})
    return items


def anthropic_results(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Anthropic Messages: one user message of ``tool_result`` blocks."""
    blocks: list[dict[str, Any]] = []
    for o in outcomes:
        content = [{"type": "text", "text": part} if isinstance(part, str) else
                   {"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": part.data}}
                   for part in o.images_and_text()] or [{"type": "text", "text": _EMPTY}]
        blocks.append({"type": "tool_result", "tool_use_id": o.call_id, "content": content, "is_error": o.is_error})
    return [{"role": "user", "content": blocks}] if blocks else []
