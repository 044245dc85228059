"""The one path from an SSE event to the JSON-RPC messages it carries.

Every SSE stream of both HTTP transports (POST reply streams, the GET stream,
their resumptions, the legacy transport's stream, the replies to the
transport's own requests) goes through :func:`event_messages`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from mcpsync.transports.http.sse_parser import SSEEvent

__all__ = ["event_messages"]

log = logging.getLogger("mcpsync.transports.http.streamable")


def event_messages(event: SSEEvent) -> list[Any]:
    """The messages *event* carries, in order.

    Only ``message`` events carry messages; blank data carries none (a priming
    event); data that is not JSON is logged and skipped; a JSON array (a batch,
    from a server of an older revision) is its items.
    """
    if event.event != "message" or not event.data.strip():
        return []
    try:
        payload = json.loads(event.data)
    except ValueError:
        log.warning("ignoring an SSE event that is not JSON")
        return []
    return payload if isinstance(payload, list) else [payload]
