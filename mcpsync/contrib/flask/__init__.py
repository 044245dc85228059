"""Flask integration: ``MCP(app)`` with servers from ``app.config``, per-user OAuth, ``flask mcp``.

::

    app = Flask(__name__)
    app.config["MCP_SERVERS"] = {"demo": {"command": "python", "args": ["-m", "mcpsync.demo"]}}
    mcp = MCP(app)

    @app.get("/add")
    def add():
        return {"sum": mcp["demo"].call_tool("add", {"a": 1, "b": 2}).text}

See ``docs/flask.rst``.

May import: Flask (and Flask-Login when installed; SQLAlchemy when the token store on the
app's database is used), :mod:`mcpsync.contrib` and everything below it.
"""

from __future__ import annotations

from ._ext import MCP

__all__ = ["MCP"]
