"""The one MCP client of this process (imported by the views).

It is created at import but connects on first use, so ``gunicorn --preload``
or uWSGI importing the site in the master starts no server process there; each
worker gets its own connection (and its own server process, for stdio).
"""

from __future__ import annotations

import atexit
import os
import sys

import mcpsync
from mcpsync.shared import SharedClient


def make_client() -> mcpsync.Client:
    if os.environ.get("MCP_CONFIG"):
        return mcpsync.Client.from_config(
            os.environ["MCP_CONFIG"], os.environ.get("MCP_SERVER", "demo"), timeout=30
        )
    return mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"], timeout=30)


client = SharedClient(make_client)
atexit.register(client.close)
