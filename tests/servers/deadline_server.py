"""A stdlib stdio MCP server (handshake era) for the deadline tests (issue 12).

Run as ``python deadline_server.py MODE [SECONDS]``:

* ``stop-reading``: answers the handshake, then stops reading its stdin (RELIABILITY B7):
  the pipe fills and a large write wedges;
* ``slow-initialize SECONDS``: answers ``server/discover`` with -32601 at once, but
  ``initialize`` only after SECONDS, reading nothing meanwhile (RELIABILITY A10);
* ``silent``: reads everything and answers nothing (a server that never starts serving).

It exits when stdin reaches EOF.
"""

from __future__ import annotations

import json
import sys
import time


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    for line in sys.stdin:
        msg = json.loads(line)
        rid, method = msg.get("id"), msg.get("method")
        if method == "notifications/initialized" and mode == "stop-reading":
            while True:  # reads nothing more: a large write to our stdin wedges on the full pipe
                time.sleep(3600)
        if mode == "silent" or rid is None:
            continue
        if method == "initialize":
            if mode == "slow-initialize":
                time.sleep(seconds)
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "deadline-server", "version": "1"}}})
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
