"""A 2026-07-28 stdio server whose tool list changes while a ``tools/list`` is in flight.

It answers ``server/discover``, acknowledges ``subscriptions/listen`` (and keeps the stream
open), and answers ``tools/list`` with a ``ttlMs`` of ten minutes.  The first ``tools/list``
is answered with the old list *after* the ``notifications/tools/list_changed`` of the new
one (the change happened after the server computed the reply): the notification overtakes
the reply it makes stale.  Later lists are the new one.  Stdlib only.
"""

from __future__ import annotations

import json
import sys
from typing import Any

VERSION = "2026-07-28"


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    listen_id: Any = None
    lists = 0
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue
        if method == "server/discover":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "resultType": "complete", "supportedVersions": [VERSION],
                "capabilities": {"tools": {"listChanged": True}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "overtake", "version": "1"}}}})
        elif method == "subscriptions/listen":
            listen_id = rid
            send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
                "_meta": {"io.modelcontextprotocol/subscriptionId": rid},
                "notifications": {"toolsListChanged": True}}})
        elif method == "tools/list":
            lists += 1
            name = "old" if lists == 1 else "new"
            if lists == 1 and listen_id is not None:
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                      "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": listen_id}}})
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "resultType": "complete", "ttlMs": 600_000, "cacheScope": "private",
                "tools": [{"name": name, "inputSchema": {"type": "object"}}]}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
