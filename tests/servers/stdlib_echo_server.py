"""A fast MCP stdio server with only the standard library, for concurrency tests.

It answers ``initialize``, ``ping``, ``tools/list`` and ``tools/call`` of one tool, ``echo``,
which returns its ``text`` argument. Replies to the requests that arrived together are written
in a shuffled order, so a client that matched replies to callers by arrival order (instead of by
id) would hand callers each other's answers. It never holds a reply back while waiting for more
input, so it cannot deadlock a client that waits for an answer before sending again.

Run: ``python tests/servers/stdlib_echo_server.py [--seed N]``.
"""

from __future__ import annotations

import json
import os
import random
import select
import sys
from typing import Any

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
ECHO_TOOL = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reply to one message, or ``None`` for a notification."""
    if "id" not in message:
        return None
    method = message.get("method")
    params = message.get("params") or {}
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize":
        requested = params.get("protocolVersion")
        reply["result"] = {
            "protocolVersion": requested if requested in VERSIONS else VERSIONS[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stdlib-echo", "version": "1.0"},
        }
    elif method == "ping":
        reply["result"] = {}
    elif method == "tools/list":
        reply["result"] = {"tools": [ECHO_TOOL]}
    elif method == "tools/call" and params.get("name") == "echo":
        text = str((params.get("arguments") or {}).get("text", ""))
        reply["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
    return reply


def main() -> None:
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 0
    shuffle = random.Random(seed).shuffle
    stdin = sys.stdin.fileno()
    out = sys.stdout.buffer
    pending = b""
    while True:
        chunk = os.read(stdin, 1 << 16)
        if not chunk:
            return
        pending += chunk
        # Take whatever else is already waiting, so replies to concurrent requests can be mixed.
        while select.select([stdin], [], [], 0)[0]:
            more = os.read(stdin, 1 << 16)
            if not more:
                break
            pending += more
        *lines, pending = pending.split(b"\n")
        replies = [reply for line in lines if line.strip() for reply in [answer(json.loads(line))] if reply]
        shuffle(replies)
        if replies:
            out.write(b"".join(json.dumps(reply).encode() + b"\n" for reply in replies))
            out.flush()


if __name__ == "__main__":
    main()
