"""MCP Apps in a Flask app: ``python examples/flask_apps.py``, then open http://localhost:5000/.

The counter of ``examples/apps_server.py`` in a page of this app.  The app's HTML runs in a
sandbox on another origin, here ``http://127.0.0.1:5000`` (the same server under another
host name); in production give it a domain of its own (see docs/apps.rst).  ``PORT`` changes
the port.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from urllib.parse import quote

import flask

from mcpsync.contrib.flask import MCP

PORT = int(os.environ.get("PORT", "5000"))

app = flask.Flask(__name__)
app.config.update(
    SECRET_KEY=os.environ.get("SECRET_KEY", "example-only-not-secret"),
    MCP_SERVERS={"counter": {"command": sys.executable, "args": [str(Path(__file__).with_name("apps_server.py"))],
                             "apps": True}},
    MCP_APPS_SANDBOX_ORIGIN=os.environ.get("MCP_APPS_SANDBOX_ORIGIN", f"http://127.0.0.1:{PORT}"),
)
mcp = MCP(app)


@app.get("/")
def index() -> str:
    url = flask.url_for("mcpsync.app", server="counter", tool="show_counter")
    return f'<p><a href="{url}?arguments={quote(json.dumps({"start": 41}))}">Show the counter</a></p>'


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=PORT, threaded=True)
