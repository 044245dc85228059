"""A Flask app that calls MCP servers through ``mcpsync.contrib.flask``.

* ``demo``: the bundled demo server over stdio, one shared client per process
  (nothing connects until the first request, so ``gunicorn --preload`` is fine);
* ``remote`` (when ``MCP_URL`` is set): an OAuth-protected server called on
  behalf of each user; tokens in ``MCP_TOKEN_DIR``, encrypted with ``MCP_TOKEN_KEY``.

Run it with ``flask --app examples/flask_app/app.py run`` (or ``gunicorn
--preload 'app:app'`` in examples/flask_app); ``flask --app ... mcp tools``
lists the demo's tools.  ``MCP_CONFIG`` names an ``mcpServers`` file to use
instead of the demo entry.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from flask import Flask, jsonify, request

import mcpsync
from mcpsync.contrib.flask import MCP

mcp = MCP()


def settings() -> dict[str, Any]:
    """The MCP part of the configuration, from the environment."""
    servers: Any = os.environ.get("MCP_CONFIG") or {
        "demo": {"command": sys.executable, "args": ["-m", "mcpsync.demo"]},
    }
    if os.environ.get("MCP_URL") and isinstance(servers, dict):
        servers["remote"] = {"url": "${MCP_URL}", "oauth": {"client_name": "flask-example"}}
    return {
        "MCP_SERVERS": servers,
        "MCP_DEFAULTS": {"timeout": float(os.environ.get("MCP_TIMEOUT", "20"))},
        "MCP_TOKEN_DIR": os.environ.get("MCP_TOKEN_DIR"),
        "MCP_TOKEN_KEY": os.environ.get("MCP_TOKEN_KEY"),
        "SECRET_KEY": os.environ.get("FLASK_SECRET_KEY", "example-only-not-secret"),
    }


def create_app(config: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(settings())
    app.config.update(config or {})
    mcp.init_app(app)  # a bad MCP_SERVERS fails here, at startup

    @app.get("/tools")
    def tools():  # type: ignore[no-untyped-def]
        return jsonify([tool.name for tool in mcp["demo"].list_tools()])

    @app.get("/add")
    def add():  # type: ignore[no-untyped-def]
        a = float(request.args.get("a", "0"))
        b = float(request.args.get("b", "0"))
        result = mcp["demo"].call_tool("add", {"a": a, "b": b})
        result.raise_for_error()
        return jsonify(sum=float(result.text), pid=os.getpid())

    @app.get("/slow")
    def slow():  # type: ignore[no-untyped-def]
        result = mcp["demo"].call_tool("countdown", {"n": int(request.args.get("n", "3"))},
                                       timeout=float(request.args.get("timeout", "20")))
        result.raise_for_error()
        return jsonify(text=result.text, pid=os.getpid())

    @app.get("/remote/tools")
    def remote_tools():  # type: ignore[no-untyped-def]
        # A login the server needs raises AuthorizationRequired: MCP redirects the user.
        with mcp.client_for_user("remote") as client:
            return {"tools": sorted(t.name for t in client.list_tools())}

    @app.get("/remote/call/<name>")
    def remote_call(name: str):  # type: ignore[no-untyped-def]
        with mcp.client_for_user("remote") as client:
            result = client.call_tool(name, dict(request.args))
            result.raise_for_error()
            return {"text": result.text}

    # What a view answers (docs/flask.rst, "In a view"); Flask picks the most specific handler.
    @app.errorhandler(mcpsync.ToolError)
    def tool_failed(exc: mcpsync.ToolError):  # type: ignore[no-untyped-def]
        return jsonify(error=type(exc).__name__, message=str(exc)), 422  # the tool refused

    @app.errorhandler(mcpsync.RequestTimeout)
    def too_slow(exc: mcpsync.RequestTimeout):  # type: ignore[no-untyped-def]
        return jsonify(error=type(exc).__name__, message=str(exc)), 504  # no answer in time

    @app.errorhandler(mcpsync.McpError)
    def mcp_failed(exc: mcpsync.McpError):  # type: ignore[no-untyped-def]
        # The MCP server is a backend: its failures are a 502, not a crash page.
        return jsonify(error=type(exc).__name__, message=str(exc)), 502

    return app


app = create_app()
