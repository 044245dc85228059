"""A Celery 5 app with a module-level stdio client, for ``tests/test_env_celery.py``.

Run by the test as ``celery -A celery_app worker -P prefork|threads|gevent -c 2`` with
``MCP_ENV_DIR`` set (see ``celery_conf.py``).  The client is made at import: in the worker's
main process before a prefork pool forks (it starts nothing there: each pool process connects on
its first task), and after ``-P gevent`` monkey-patched.  The server is
``tests/servers/stubborn_server.py`` (the demo server, but it outlives its stdin's EOF): gone
after the worker stopped means the client closed it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from celery.signals import worker_process_shutdown
from celery_conf import make_app

import mcpsync

STUBBORN = Path(__file__).resolve().parent.parent / "servers" / "stubborn_server.py"

app = make_app(os.environ["MCP_ENV_DIR"])
client = mcpsync.Client.stdio([sys.executable, str(STUBBORN)], timeout=20)


@app.task(name="mcp.call")
def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call *tool* on the shared client: the text of its result, the pid, and when it ran."""
    start = time.time()
    text = client.call_tool(tool, arguments).text
    return {"pid": os.getpid(), "text": text, "start": start, "end": time.time()}


@worker_process_shutdown.connect
def close_client(**_: Any) -> None:
    """A prefork pool process ends with ``os._exit()``, so no atexit hook runs there: close here."""
    client.close()
