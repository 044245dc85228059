"""A WSGI app with a module-level stdio client, for the uWSGI test (``tests/test_env_uwsgi.py``).

The client is made at import, in the uWSGI master (it starts nothing there); each forked worker
connects on its first call.  The server is ``tests/servers/stubborn_server.py`` (the demo server,
but it outlives its stdin's EOF): gone after uWSGI stopped means the client closed it.

``GET /add?a=1&b=2`` answers ``{"pid": <worker pid>, "text": "3"}``; ``GET /countdown?n=2&delay=0.5``
holds the worker for that long (to spread concurrent requests over the workers).  The server
command is this environment's ``MCP_ENV_PYTHON`` (uWSGI's ``sys.executable`` is uWSGI itself).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import mcpsync

STUBBORN = Path(__file__).resolve().parent.parent / "servers" / "stubborn_server.py"

client = mcpsync.Client.stdio([os.environ["MCP_ENV_PYTHON"], str(STUBBORN)], timeout=20)


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
    tool = environ["PATH_INFO"].strip("/")
    try:
        args = {k: float(v) if "." in v else int(v) for k, v in query.items()}
        body = {"pid": os.getpid(), "text": client.call_tool(tool, args).text}
        status = "200 OK"
    except mcpsync.McpError as exc:
        body, status = {"pid": os.getpid(), "error": f"{type(exc).__name__}: {exc}"}, "502 Bad Gateway"
    start_response(status, [("Content-Type", "application/json")])
    return [json.dumps(body).encode()]
