"""Tools: ``list_tools`` and ``call_tool``, the same in both eras (functions over :class:`~.core.Core`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpsync import types
from mcpsync.client.core import Core, paginate
from mcpsync.client.options import DEFAULT, TimeoutArg
from mcpsync.rpc.session import ProgressCallback

__all__ = ["call_tool", "list_tools"]


def list_tools(client: Core, *, timeout: TimeoutArg = DEFAULT, cache: bool = True) -> list[types.Tool]:
    """All tools the server offers (every page).

    :param cache: reuse a result the server marked cacheable (``ttlMs``); ``False``
        always asks the server.
    """
    tools: list[types.Tool] = paginate(client, "tools/list", "tools", types.ListToolsResult, "tools",
                                       client._options.deadline(timeout), cache)
    client._tools = {tool.name: tool for tool in tools}
    return tools


def call_tool(client: Core, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: TimeoutArg = DEFAULT,
              progress: ProgressCallback | None = None, reset_timeout_on_progress: bool = True,
              max_total_timeout: float | None = None, meta: Mapping[str, Any] | None = None, retry: bool | None = None,
              caller: str | None = None) -> types.CallToolResult:
    """Call a tool and return its result.

    A result with ``is_error`` is returned, not raised: call ``result.raise_for_error()``
    to raise :class:`~mcpsync.ToolError`.  When the tool was listed with an
    ``outputSchema`` and :mod:`jsonschema` is installed, ``structured_content`` is
    validated against it, within the call's *timeout* and in bounded work
    (docs/security.rst).

    :param progress: ``fn(progress, total, message)``, run on the dispatcher thread.
    :param reset_timeout_on_progress: progress restarts the *timeout* window.
    :param max_total_timeout: a hard cap, progress or not.
    :param retry: ``True`` allows retrying this call after a transient failure although
        the tool declares neither ``idempotentHint`` nor ``readOnlyHint``; ``False``
        never retries it (docs/policies.rst).
    :param caller: ``"app"`` or ``"model"``: raise :class:`~mcpsync.ToolNotVisible`,
        sending nothing, unless the tool's MCP Apps visibility includes it (docs/apps.rst).
    """
    deadline = client._options.deadline(timeout, max_total_timeout, reset_timeout_on_progress)
    if caller is not None:
        from mcpsync.client.apps import check_caller

        check_caller(client, name, caller, deadline)
    params: dict[str, Any] = {"name": name, "arguments": dict(arguments or ())}
    if meta:
        params["_meta"] = dict(meta)
    raw = client._call("tools/call", params, deadline, capability="tools", progress=progress, retry=retry,
                       accept=("task",))
    if raw.get("resultType") == "task":
        # Only with the tasks extension turned on for every request: wait for it here.
        from mcpsync.client.task_handle import follow_task

        return follow_task(client, raw, deadline)
    result = types.tools.call_tool_result_from_wire(raw)
    tool = client._tools.get(name)
    if tool is not None and tool.output_schema is not None and not result.is_error:
        from mcpsync.client.output_schema import check_structured_content

        # Checking is part of the call: by its deadline (a fresh window after progress
        # that resets it), and never past max_total_timeout.
        check_structured_content(name, tool.output_schema, result.structured_content, deadline)
    return result
