"""A raw MCP stdio server that costs almost nothing, so client cost shows.

Newline-delimited JSON on stdin/stdout; handles ``initialize``, ``ping``,
``tools/list`` and ``tools/call`` (``echo``, ``add``); ``server/discover``
answers -32601 so dual-era clients fall back to the handshake.  Standard
library only: it runs under every client's interpreter (``python -S`` too).
"""

import json
import sys

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
TOOLS = {
    "tools": [
        {
            "name": "echo",
            "description": "Return the text argument.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
        {
            "name": "add",
            "description": "Add two numbers.",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            },
        },
    ]
}


def answer(msg):
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "tools/call":
        args = params.get("arguments") or {}
        if params.get("name") == "echo":
            text = args.get("text", "")
        else:
            text = str(args.get("a", 0) + args.get("b", 0))
        return {"content": [{"type": "text", "text": text}]}, None
    if method == "tools/list":
        return TOOLS, None
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw-stdio", "version": "1"},
        }, None
    if method == "ping":
        return {}, None
    return None, {"code": -32601, "message": "method not found"}


def main():
    out = sys.stdout.buffer
    dumps = json.dumps
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue  # notifications and stray replies
        result, error = answer(msg)
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        if error is None:
            reply["result"] = result
        else:
            reply["error"] = error
        out.write(dumps(reply, separators=(",", ":")).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
