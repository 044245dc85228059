"""A Flask app that calls an MCP server: one shared, lazily connected client per process.

Run it with ``flask --app examples/flask_app/app.py run`` (or under gunicorn,
``--preload`` included: nothing connects until the first request in a worker).
"""

from __future__ import annotations

import atexit
import os
import sys

from flask import Flask, jsonify, request

import mcpsync
from mcpsync.shared import SharedClient


def make_client() -> mcpsync.Client:
    """The MCP server of this app: an mcpServers entry, or the bundled demo server."""
    if os.environ.get("MCP_CONFIG"):
        return mcpsync.Client.from_config(
            os.environ["MCP_CONFIG"], os.environ.get("MCP_SERVER", "demo"), timeout=30
        )
    return mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"], timeout=30)


#: Module level: created at import, connected on first use, shared by all threads.
mcp = SharedClient(make_client)
atexit.register(mcp.close)


def create_app() -> Flask:
    app = Flask(__name__)

    @app.get("/tools")
    def tools():  # type: ignore[no-untyped-def]
        return jsonify([tool.name for tool in mcp.list_tools()])

    @app.get("/add")
    def add():  # type: ignore[no-untyped-def]
        a = float(request.args.get("a", "0"))
        b = float(request.args.get("b", "0"))
        result = mcp.call_tool("add", {"a": a, "b": b})
        result.raise_for_error()
        return jsonify(sum=float(result.text), pid=os.getpid())

    @app.errorhandler(mcpsync.McpError)
    def mcp_failed(exc: mcpsync.McpError):  # type: ignore[no-untyped-def]
        # The MCP server is a backend: its failures are a 502, not a crash page.
        return jsonify(error=type(exc).__name__, message=str(exc)), 502

    return app


app = create_app()
