"""Tool definitions in each provider's format, with input schemas every provider accepts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpsync import types

#: Top-level keywords OpenAI and Anthropic refuse in a tool's input schema.
_COMBINATORS = ("anyOf", "oneOf", "allOf")
_REFUSED_TOP = ("not", "enum", "const", "if", "then", "else")


def object_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """*schema* as an object schema with ``properties``, as the providers require.

    A missing or different top-level ``type`` becomes ``"object"``; top-level
    ``anyOf``/``oneOf``/``allOf`` (refused by both providers) are folded into
    ``properties`` (``required`` is kept only from ``allOf``); the server still
    validates the arguments it gets.  The input is not modified.
    """
    fixed = dict(schema) if isinstance(schema, Mapping) else {}
    fixed["type"] = "object"
    properties = dict(fixed["properties"]) if isinstance(fixed.get("properties"), Mapping) else {}
    required = list(fixed["required"]) if isinstance(fixed.get("required"), list) else []
    for key in _COMBINATORS:
        branches = fixed.pop(key, None)
        for branch in branches if isinstance(branches, list) else []:
            if isinstance(branch, Mapping) and isinstance(branch.get("properties"), Mapping):
                for name, spec in branch["properties"].items():
                    properties.setdefault(name, spec)
                if key == "allOf" and isinstance(branch.get("required"), list):
                    required += [r for r in branch["required"] if r not in required]
    for key in _REFUSED_TOP:
        fixed.pop(key, None)
    fixed["properties"] = properties
    if required:
        fixed["required"] = [r for r in required if isinstance(r, str)]
    else:
        fixed.pop("required", None)
    return fixed


def for_model(tools: list[types.Tool]) -> list[types.Tool]:
    """The tools a model may be offered: MCP Apps hides those whose visibility lacks "model"."""
    return [tool for tool in tools if tool.ui is None or tool.ui.model_visible]


def openai_tool(tool: types.Tool, name: str, api: str) -> dict[str, Any]:
    """One tool for OpenAI Chat Completions (``api="chat"``) or Responses."""
    function = {"name": name, "description": tool.description or tool.title or "",
                "parameters": object_schema(tool.input_schema)}
    if api == "responses":  # it defaults to strict mode, which most MCP schemas do not meet
        return {"type": "function", **function, "strict": False}
    return {"type": "function", "function": function}


def anthropic_tool(tool: types.Tool, name: str) -> dict[str, Any]:
    """One tool for the Anthropic Messages API."""
    definition: dict[str, Any] = {"name": name, "input_schema": object_schema(tool.input_schema)}
    if tool.description or tool.title:
        definition["description"] = tool.description or tool.title
    return definition
