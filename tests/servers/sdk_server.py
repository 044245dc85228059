"""A real MCP server built on the official Python SDK (``mcp`` 2.3.0), served over stdio.

The integration tests start it as ``python tests/servers/sdk_server.py [options]`` and talk to
it with :class:`mcpsync.Client`. It exercises every client-facing feature of MCP: tools with
every content type, structured output, ``isError``, progress, logging, sampling (with tools),
form and URL elicitation, roots, list-changed and resource-updated notifications, resources,
templates, subscriptions, prompts, completion, ping and small pages so that the client's
auto-pagination is exercised.

It is written against the SDK's low-level :class:`mcp.server.lowlevel.Server` because
``MCPServer`` offers neither pagination nor ``logging/setLevel``/``resources/subscribe``
handlers. Over stdio ``Server.run`` is dual-era: the client's first request decides whether
this connection speaks the handshake era (``initialize``) or 2026-07-28. Server-to-client
requests (sampling, elicitation, roots) are therefore done both ways: a mid-call request in the
handshake era, a Multi Round-Trip ``input_required`` result in the modern era.

Options::

    --page-size N        items per page of every list method (default 3)
    --legacy-only        serve only the handshake era (mcp.server.runner.serve_loop)
    --versions A,B       handshake versions this server accepts; the newest is its answer to
                         an unknown version (simulates an older server)
    --instructions TEXT  the ``instructions`` string of the initialize result
    --ttl-ms N           the 2026-07-28 ``ttlMs`` cache hint of every cacheable result (default 0:
                         immediately stale)
    --no-listen          do not serve ``subscriptions/listen`` (2026-07-28 without notifications)

In 2026-07-28, list-changed and resource-updated notifications travel on ``subscriptions/listen``
streams, served by the SDK's :class:`~mcp.server.subscriptions.ListenHandler`; the tools that
change something publish on its bus as well as sending the handshake era's notifications.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any, ClassVar

import anyio
import mcp_types as types
from mcp.server import runner
from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from sdk_catalog import (
    LEVELS,
    PROMPTS,
    RESOURCES,
    TEMPLATES,
    TOOLS,
    complete_values,
    paginate,
    prompt_messages,
    read_uri,
)

# The SDK marks logging, roots and sampling deprecated as of 2026-07-28; this peer must still
# serve them to handshake-era clients, and a warning on stderr would only be noise.
warnings.simplefilter("ignore")

Ctx = ServerRequestContext[Any, Any]
Result = dict[str, Any]


class State:
    """Everything the server remembers across requests of its one connection."""

    page_size = 3
    log_level = "debug"
    subscriptions: ClassVar[set[str]] = set()
    roots_changed = 0
    dynamic_tools: ClassVar[list[dict[str, Any]]] = []
    list_calls: ClassVar[dict[str, int]] = {}
    #: ``slow`` calls that ran to the end, and those cancelled (notifications/cancelled).
    slow: ClassVar[dict[str, int]] = {"done": 0, "cancelled": 0}
    #: Fan-out to the open ``subscriptions/listen`` streams (2026-07-28).
    bus = InMemorySubscriptionBus()


def _modern(ctx: Ctx) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _text(text: str, *, is_error: bool = False, structured: Any = None) -> Result:
    result: Result = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def _page(method: str, items: list[dict[str, Any]], key: str, params: Any) -> Result:
    State.list_calls[method] = State.list_calls.get(method, 0) + 1
    cursor = params.cursor if params is not None else None
    try:
        page, next_cursor = paginate(items, cursor, State.page_size)
    except ValueError:
        raise MCPError(code=types.INVALID_PARAMS, message=f"bad cursor {cursor!r}") from None
    result: Result = {key: page}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


async def _ask(ctx: Ctx, key: str, method: str, params: Result, result_type: type[Any]) -> Result | None:
    """Ask the client something, in whichever way the negotiated era allows.

    Returns the client's answer as a wire dict, or ``None`` in the modern era when the answer
    has not arrived yet (the caller then returns :func:`_input_required`).
    """
    if _modern(ctx):
        responses = (ctx.params or {}).get("inputResponses") or {}
        answer = responses.get(key)
        return dict(answer) if answer is not None else None
    request_classes: dict[str, Any] = {
        "sampling/createMessage": types.CreateMessageRequest,
        "elicitation/create": types.ElicitRequest,
        "roots/list": types.ListRootsRequest,
    }
    request = request_classes[method].model_validate({"method": method, "params": params})
    answer = await ctx.session.send_request(
        request, result_type, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
    )
    dumped: Result = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def _input_required(key: str, method: str, params: Result) -> Result:
    return {"resultType": "input_required", "inputRequests": {key: {"method": method, "params": params}}}


async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Result:
    return _page("tools/list", TOOLS + State.dynamic_tools, "tools", params)


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> Result:
    args = params.arguments or {}
    handler = TOOL_HANDLERS.get(params.name)
    if handler is None:
        if any(tool["name"] == params.name for tool in State.dynamic_tools):
            return _text(f"dynamic tool {params.name}")
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    return await handler(ctx, args)


async def tool_echo(ctx: Ctx, args: Result) -> Result:
    return _text(str(args.get("text", "")))


async def tool_add(ctx: Ctx, args: Result) -> Result:
    total = args["a"] + args["b"]
    return _text(str(total), structured={"sum": total})


async def tool_fail(ctx: Ctx, args: Result) -> Result:
    return _text(str(args.get("message", "failed")), is_error=True)


async def tool_media(ctx: Ctx, args: Result) -> Result:
    content: list[Result] = [
        {"type": "text", "text": "media follows"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "memo://note/1", "name": "note-1", "mimeType": "text/plain"},
        {
            "type": "resource",
            "resource": {"uri": "memo://note/2", "mimeType": "text/plain", "text": "note 2"},
        },
        {
            "type": "resource",
            "resource": {"uri": "memo://blob/1", "mimeType": "application/octet-stream", "blob": "AAECAw=="},
        },
    ]
    return {"content": content, "isError": False}


async def tool_slow(ctx: Ctx, args: Result) -> Result:
    steps = int(args.get("steps", 3))
    delay = float(args.get("delay", 0.05))
    try:
        for step in range(1, steps + 1):
            await anyio.sleep(delay)
            await ctx.session.report_progress(step, steps, f"step {step}/{steps}")
    except anyio.get_cancelled_exc_class():
        State.slow["cancelled"] += 1
        raise
    State.slow["done"] += 1
    return _text(f"done after {steps} steps")


async def tool_log(ctx: Ctx, args: Result) -> Result:
    sent = 0
    for level in args.get("levels", LEVELS):
        # In the handshake era, filtering by logging/setLevel is the server's job.
        if not _modern(ctx) and LEVELS.index(level) < LEVELS.index(State.log_level):
            continue
        await ctx.session.send_log_message(
            level, {"msg": f"{level} message"}, logger="sdk-server", related_request_id=ctx.request_id
        )
        sent += 1
    return _text(str(sent))


async def tool_sample(ctx: Ctx, args: Result) -> Result:
    request: Result = {
        "messages": [{"role": "user", "content": {"type": "text", "text": args.get("prompt", "hi")}}],
        "maxTokens": 64,
        "systemPrompt": "be brief",
    }
    result_type: type[Any] = types.CreateMessageResult
    if args.get("with_tools"):
        request["tools"] = [
            {"name": "weather", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}
        ]
        request["toolChoice"] = {"mode": "auto"}
        result_type = types.CreateMessageResultWithTools
    answer = await _ask(ctx, "sample", "sampling/createMessage", request, result_type)
    if answer is None:
        return _input_required("sample", "sampling/createMessage", request)
    return _text(f"sampled by {answer.get('model')}", structured=answer)


async def tool_elicit_form(ctx: Ctx, args: Result) -> Result:
    request: Result = {
        "mode": "form",
        "message": args.get("message", "Who are you?"),
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name"],
        },
    }
    answer = await _ask(ctx, "form", "elicitation/create", request, types.ElicitResult)
    if answer is None:
        return _input_required("form", "elicitation/create", request)
    return _text(answer["action"], structured=answer)


async def tool_elicit_url(ctx: Ctx, args: Result) -> Result:
    request: Result = {
        "mode": "url",
        "message": "Please sign in",
        "url": args.get("url", "https://example.com/login"),
        "elicitationId": "elicit-1",
    }
    answer = await _ask(ctx, "url", "elicitation/create", request, types.ElicitResult)
    if answer is None:
        return _input_required("url", "elicitation/create", request)
    if answer["action"] == "accept" and not _modern(ctx):
        await ctx.session.send_elicit_complete("elicit-1")
    return _text(answer["action"], structured=answer)


async def tool_list_roots(ctx: Ctx, args: Result) -> Result:
    answer = await _ask(ctx, "roots", "roots/list", {}, types.ListRootsResult)
    if answer is None:
        return _input_required("roots", "roots/list", {})
    return _text(" ".join(root["uri"] for root in answer["roots"]), structured=answer)


async def tool_stats(ctx: Ctx, args: Result) -> Result:
    client = ctx.session.client_params
    caps = ctx.session.client_capabilities
    stats = {
        "protocolVersion": ctx.protocol_version,
        "clientInfo": client.client_info.model_dump(mode="json", exclude_none=True) if client else None,
        "clientCapabilities": caps.model_dump(by_alias=True, mode="json", exclude_none=True)
        if caps
        else None,
        "rootsChanged": State.roots_changed,
        "subscriptions": sorted(State.subscriptions),
        "listCalls": State.list_calls,
        "logLevel": State.log_level,
        "slow": State.slow,
    }
    return _text("stats", structured=stats)


async def tool_add_tool(ctx: Ctx, args: Result) -> Result:
    name = str(args["name"])
    State.dynamic_tools.append({"name": name, "inputSchema": {"type": "object"}})
    if _modern(ctx):
        await State.bus.publish(ToolsListChanged())
    else:
        await ctx.session.send_tool_list_changed()
    return _text(f"added {name}")


async def tool_touch(ctx: Ctx, args: Result) -> Result:
    uri = str(args["uri"])
    if _modern(ctx):
        # The listen handler filters by each stream's resourceSubscriptions.
        await State.bus.publish(ResourceUpdated(uri))
        return _text("published")
    notified = uri in State.subscriptions
    if notified:
        await ctx.session.send_resource_updated(uri)
    return _text("notified" if notified else "not subscribed")


TOOL_HANDLERS = {
    "echo": tool_echo,
    "add": tool_add,
    "fail": tool_fail,
    "media": tool_media,
    "slow": tool_slow,
    "log": tool_log,
    "sample": tool_sample,
    "elicit_form": tool_elicit_form,
    "elicit_url": tool_elicit_url,
    "list_roots": tool_list_roots,
    "stats": tool_stats,
    "add_tool": tool_add_tool,
    "touch": tool_touch,
}


async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Result:
    return _page("resources/list", RESOURCES, "resources", params)


async def list_templates(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Result:
    return _page("resources/templates/list", TEMPLATES, "resourceTemplates", params)


async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> Result:
    contents = read_uri(params.uri)
    if contents is None:
        raise MCPError(code=-32002, message="Resource not found", data={"uri": params.uri})
    return {"contents": contents}


async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
    State.subscriptions.add(params.uri)
    return types.EmptyResult()


async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    State.subscriptions.discard(params.uri)
    return types.EmptyResult()


async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Result:
    return _page("prompts/list", PROMPTS, "prompts", params)


async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> Result:
    try:
        return prompt_messages(params.name, params.arguments or {})
    except (KeyError, ValueError) as exc:
        raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None


async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> Result:
    context = params.context.arguments if params.context and params.context.arguments else {}
    ref = params.ref.model_dump(by_alias=True, mode="json")
    values = complete_values(ref, params.argument.name, params.argument.value, context)
    return {"completion": {"values": values, "total": len(values), "hasMore": False}}


async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    State.log_level = params.level
    return types.EmptyResult()


async def roots_changed(ctx: Ctx, params: types.NotificationParams | None) -> None:
    State.roots_changed += 1


def _stamped(handler: Any) -> Any:
    """Mark a handler's dict results ``complete`` in the modern era, where ``resultType`` is required."""

    async def wrapper(ctx: Ctx, params: Any) -> Any:
        result = await handler(ctx, params)
        if _modern(ctx) and isinstance(result, dict) and "resultType" not in result:
            result = {**result, "resultType": "complete"}
        return result

    return wrapper


def build_server(instructions: str | None, *, ttl_ms: int = 0, listen: bool = True) -> Server[Any]:
    """Create the low-level server with every handler registered."""
    server: Server[Any] = Server(
        "sdk-test-server",
        version="2.3.0-test",
        title="mcpsync SDK test server",
        instructions=instructions,
        # 2026-07-28 requires freshness hints on these results; "immediately stale" (0) is the
        # honest default, as the catalogue can change at any time.
        cache_hints={method: CacheHint(ttl_ms=ttl_ms, scope="private") for method in CACHEABLE_METHODS},
        on_list_tools=_stamped(list_tools),
        on_call_tool=_stamped(call_tool),
        on_list_resources=_stamped(list_resources),
        on_list_resource_templates=_stamped(list_templates),
        on_read_resource=_stamped(read_resource),
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_subscriptions_listen=ListenHandler(State.bus) if listen else None,
        on_list_prompts=_stamped(list_prompts),
        on_get_prompt=_stamped(get_prompt),
        on_completion=_stamped(complete),
        on_set_logging_level=set_level,
        on_roots_list_changed=roots_changed,
    )
    # OpenTelemetry spans per message are of no use here and cost time under load.
    server.middleware.clear()
    return server


async def serve(args: argparse.Namespace) -> None:
    server = build_server(args.instructions, ttl_ms=args.ttl_ms, listen=not args.no_listen)
    options = server.create_initialization_options(
        NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
    )
    async with stdio_server() as (read_stream, write_stream):
        if args.legacy_only:
            await runner.serve_loop(
                server, read_stream, write_stream, lifespan_state={}, init_options=options
            )
        else:
            await server.run(read_stream, write_stream, options)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page-size", type=int, default=3)
    parser.add_argument("--legacy-only", action="store_true")
    parser.add_argument("--versions", default=None)
    parser.add_argument("--instructions", default="Test server for mcpsync.")
    parser.add_argument("--ttl-ms", type=int, default=0)
    parser.add_argument("--no-listen", action="store_true")
    args = parser.parse_args(argv)
    State.page_size = args.page_size
    if args.versions:
        # Simulate an older server: the runner answers an unknown version with its newest one.
        versions = tuple(sorted(args.versions.split(",")))
        setattr(runner, "HANDSHAKE_PROTOCOL_VERSIONS", versions)  # noqa: B010 - not exported
        setattr(runner, "LATEST_HANDSHAKE_VERSION", versions[-1])  # noqa: B010 - not exported
    print("sdk-server: starting", file=sys.stderr, flush=True)
    anyio.run(serve, args)


if __name__ == "__main__":
    main()
