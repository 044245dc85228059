"""An official-SDK (``mcp`` 2.3.0) server over stdio whose tools test what LLM providers refuse.

Tool names longer than OpenAI's 64 characters or with characters no provider takes (and one
that collides with such a name once made valid), an input schema with a top-level ``anyOf``
(the SDK itself refuses to serve one without ``type: object``), images of a type no provider
shows, and ``meet``, which succeeds only when *n* calls of it are running at the same time
(proof that calls run concurrently).
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import anyio
from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

warnings.simplefilter("ignore")

LONG = "a_tool_whose_name_is_far_too_long_for_openai_" + "x" * 60
SCHEMAS: dict[str, dict[str, Any]] = {
    LONG: {"type": "object", "properties": {}},
    "weird.name/tool": {"type": "object", "properties": {}},
    "weird_name_tool": {"type": "object", "properties": {}},
    "either": {
        "type": "object",
        "anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "integer"}}},
        ],
    },
    "pictures": {"type": "object", "properties": {}},
    "meet": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
}
PNG = "iVBORw0KGgo="


class Meeting:
    arrived = 0
    everyone = anyio.Event()


def _result(ctx: Any, result: dict[str, Any]) -> dict[str, Any]:
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        result["resultType"] = "complete"
    return result


def _text(text: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


async def list_tools(ctx: Any, params: Any) -> dict[str, Any]:
    tools = [
        {"name": name, "description": f"test tool {name}", "inputSchema": s}
        for name, s in SCHEMAS.items()
    ]
    return _result(ctx, {"tools": tools})


async def call_tool(ctx: Any, params: Any) -> dict[str, Any]:
    args = params.arguments or {}
    if params.name == "pictures":
        return _result(
            ctx,
            {
                "content": [
                    {"type": "text", "text": "two pictures"},
                    {"type": "image", "data": PNG, "mimeType": "image/png"},
                    {"type": "image", "data": "PHN2Zy8+", "mimeType": "image/svg+xml"},
                ]
            },
        )
    if params.name == "meet":
        Meeting.arrived += 1
        if Meeting.arrived >= int(args["n"]):
            Meeting.everyone.set()
        with anyio.move_on_after(10):
            await Meeting.everyone.wait()
            return _result(ctx, _text(f"met {Meeting.arrived}"))
        return _result(ctx, _text("nobody else came", is_error=True))
    return _result(ctx, _text(f"{params.name} ran with {json.dumps(args, sort_keys=True)}"))


async def serve() -> None:
    server: Server[Any] = Server(
        "llm-tools",
        version="1.0",
        cache_hints={method: CacheHint(ttl_ms=0, scope="private") for method in CACHEABLE_METHODS},
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    server.middleware.clear()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    print("llm-tools-server: starting", file=sys.stderr, flush=True)
    anyio.run(serve)
