"""Prompts, the same in both eras (functions over :class:`~.core.Core`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpsync import types
from mcpsync.client.core import Core, paginate
from mcpsync.client.options import DEFAULT, TimeoutArg

__all__ = ["get_prompt", "list_prompts"]


def list_prompts(client: Core, *, timeout: TimeoutArg = DEFAULT, cache: bool = True) -> list[types.Prompt]:
    """All prompts (every page)."""
    return paginate(client, "prompts/list", "prompts", types.ListPromptsResult, "prompts",
                    client._options.deadline(timeout), cache)


def get_prompt(client: Core, name: str, arguments: Mapping[str, str] | None = None, *,
               timeout: TimeoutArg = DEFAULT) -> types.GetPromptResult:
    """Render a prompt; ``.messages`` holds the conversation."""
    params: dict[str, Any] = {"name": name}
    if arguments:
        params["arguments"] = {key: str(value) for key, value in arguments.items()}
    raw = client._call("prompts/get", params, client._options.deadline(timeout), capability="prompts")
    return types.from_wire(types.GetPromptResult, raw)
