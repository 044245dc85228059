"""A raw MCP stdio server with canned replies, so that the client's own cost shows.

Newline-delimited JSON on stdin/stdout.  Every reply but ``echo``'s is precomputed
bytes with only the request's id put in: the id and the method are found by
scanning the line, never by parsing it (a server doing real work per call hides the
client's cost behind its own).  Answers ``initialize``, ``ping``, ``tools/list`` and
``tools/call`` (``add`` is always 1 + 2, as the bench calls it; ``echo`` parses
its one argument); ``server/discover`` gets -32601, so dual-era clients fall back
to the handshake.  Standard library only: it runs under every client's
interpreter (``python -S`` too).
"""

import json
import re
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


def _dump(value):
    return json.dumps(value, separators=(",", ":")).encode()


def _init(version):
    return _dump({"protocolVersion": version, "capabilities": {"tools": {}},
                  "serverInfo": {"name": "raw-stdio", "version": "1"}})


#: method -> the bytes after the id: ``,"result":...}`` or ``,"error":...}``.
CANNED = {
    b"tools/list": b',"result":' + _dump(TOOLS) + b"}",
    b"ping": b',"result":{}}',
}
ADD = b',"result":{"content":[{"type":"text","text":"3"}]}}'
NOT_FOUND = b',"error":{"code":-32601,"message":"method not found"}}'
INIT = {version.encode(): b',"result":' + _init(version) + b"}" for version in VERSIONS}
LATEST = INIT[VERSIONS[-1].encode()]

_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')
_METHOD = re.compile(rb'"method"\s*:\s*"([^"]*)"')
_VERSION = re.compile(rb'"protocolVersion"\s*:\s*"([^"]*)"')


def tail(method, line):
    """The bytes of the reply after its id (``None``: a notification or a stray reply)."""
    found = CANNED.get(method)
    if found is not None:
        return found
    if method == b"tools/call":
        if b'"echo"' not in line:
            return ADD
        text = json.loads(line)["params"]["arguments"].get("text", "")
        return b',"result":' + _dump({"content": [{"type": "text", "text": text}]}) + b"}"
    if method == b"initialize":
        asked = _VERSION.search(line)
        return INIT.get(asked.group(1), LATEST) if asked else LATEST
    return NOT_FOUND


def reply(line):
    """The whole reply line to one request line, or ``None`` (notifications, replies)."""
    method = _METHOD.search(line)
    rid = _ID.search(line)
    if method is None or rid is None:
        return None
    return b'{"jsonrpc":"2.0","id":' + rid.group(1) + tail(method.group(1), line) + b"\n"


def main():
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        data = reply(line)
        if data is not None:
            out.write(data)
            out.flush()


if __name__ == "__main__":
    main()
