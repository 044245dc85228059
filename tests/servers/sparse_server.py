"""A small hand-written stdio MCP server that has only some of the features.

It speaks the handshake era (2025-06-18) only, has tools with the JSON
Schema shapes real servers use (type lists, ``anyOf``, enums, arrays,
``additionalProperties: false``), resources but no ``resources/templates/list``
(like many servers on the official SDK 1.x: the method is not found), and no
prompts at all (and with ``--no-tools``, no tools either).  Each tool call
echoes its arguments back as JSON.
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": "search", "description": "Search things.\nSecond line not shown.",
     "inputSchema": {"type": "object", "additionalProperties": False, "required": ["query"],
                     "properties": {
                         "query": {"type": "string"},
                         "exact": {"type": ["boolean", "string"]},
                         "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                         "tags": {"type": "array", "items": {"type": "string"}},
                         "unit": {"enum": ["celsius", "fahrenheit"]},
                     }}},
    {"name": "open", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
]


def reply(request_id: object, result: object = None, error: object = None) -> None:
    message = {"jsonrpc": "2.0", "id": request_id}
    message.update({"error": error} if error is not None else {"result": result})
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    capabilities = {"resources": {}} if "--no-tools" in sys.argv else {"tools": {}, "resources": {}}
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            reply(request_id, {"protocolVersion": "2025-06-18",
                               "capabilities": capabilities,
                               "serverInfo": {"name": "sparse", "version": "1"}})
        elif method == "tools/list":
            reply(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            text = json.dumps(message["params"].get("arguments"), sort_keys=True)
            reply(request_id, {"content": [{"type": "text", "text": text}]})
        elif method == "resources/list":
            reply(request_id, {"resources": [{"uri": "file:///a.txt", "name": "a"}]})
        elif method == "ping":
            reply(request_id, {})
        else:
            reply(request_id, error={"code": -32601, "message": f"Method not found: {method}"})


if __name__ == "__main__":
    main()
