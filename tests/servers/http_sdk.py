"""The official-SDK test server (``sdk_server.build_server``) served over HTTP with uvicorn.

Run as ``python tests/servers/http_sdk.py --transport streamable|sse [--json] [--stateless]``.
It binds 127.0.0.1 on an ephemeral port and prints ``PORT=<n>`` on stdout once it listens.

* ``streamable``: Streamable HTTP at ``/mcp``; ``--json`` selects JSON-response mode (the SDK
  then drops progress and log notifications), ``--stateless`` the stateless mode (no session,
  no GET stream).
* ``sse``: legacy HTTP+SSE (2024-11-05): ``GET /sse`` and ``POST /messages/``.

``--legacy-only`` makes the Streamable HTTP app behave like an SDK release from before
2026-07-28: the ``MCP-Protocol-Version`` header of a modern request is dropped before the SDK
routes on it, so the SDK's handshake-era path answers (as an older server would).
``--gzip`` compresses every response, event streams included (Starlette's ``GZipMiddleware``,
flushed per message, as a compressing proxy does).
``--header-tool`` adds the tool ``regional`` whose ``region`` parameter is mirrored into the
``Mcp-Param-Region`` header (``x-mcp-header``), which the SDK checks on 2026-07-28 calls.
"""

from __future__ import annotations

import argparse
import socket
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sdk_server
import uvicorn
from mcp.server.lowlevel import NotificationOptions
from mcp.server.sse import SseServerTransport
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

warnings.simplefilter("ignore")


def sse_app(server: Any) -> Starlette:
    sse = SseServerTransport("/messages/")
    options = server.create_initialization_options(
        NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
    )

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, options)
        return Response()

    return Starlette(routes=[Route("/sse", endpoint=handle_sse, methods=["GET"]),
                             Mount("/messages/", app=sse.handle_post_message)])


_HANDSHAKE_VERSIONS = {b"2024-11-05", b"2025-03-26", b"2025-06-18", b"2025-11-25"}


def legacy_only(app: Any) -> Any:
    """Wrap *app* so that it never sees a modern ``MCP-Protocol-Version`` header."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            headers = [(k, v) for k, v in scope["headers"]
                       if k != b"mcp-protocol-version" or v in _HANDSHAKE_VERSIONS]
            scope = {**scope, "headers": headers}
        await app(scope, receive, send)

    return wrapped


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["streamable", "sse"], default="streamable")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--page-size", type=int, default=3)
    parser.add_argument("--legacy-only", action="store_true")
    parser.add_argument("--header-tool", action="store_true")
    parser.add_argument("--gzip", action="store_true")
    args = parser.parse_args()
    sdk_server.State.page_size = args.page_size
    if args.header_tool:
        sdk_server.State.dynamic_tools.append({
            "name": "regional", "description": "A tool routed on its region",
            "inputSchema": {"type": "object", "required": ["region"], "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}}}})
    server = sdk_server.build_server("Test server for mcpsync.")
    if args.transport == "sse":
        app = sse_app(server)
    else:
        app = server.streamable_http_app(json_response=args.json, stateless_http=args.stateless)
        if args.legacy_only:
            app = legacy_only(app)
    if args.gzip:
        from starlette.middleware.gzip import GZipMiddleware

        app = GZipMiddleware(app, minimum_size=1, exclude_content_types=())
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections queue until uvicorn accepts: no start-up race
    print(f"PORT={sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
