"""What every 2026-07-28 result of the server engine carries: ``resultType``, cache hints and
``serverInfo`` (:func:`stamp`).  Below the stateless era, the tool threads and the tasks,
which all stamp their results.
"""

from __future__ import annotations

from typing import Any

from mcpsync.testing.server.context import Peer
from mcpsync.types.modern import SERVER_INFO_KEY

__all__ = ["stamp"]

#: Results that must carry ``ttlMs``/``cacheScope`` (2026-07-28 ``CacheableResult``).
_CACHEABLE = {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}


def stamp(conn: Peer, method: str, result: dict[str, Any]) -> dict[str, Any]:
    """Add what every 2026-07-28 result carries: ``resultType``, cache hints, ``serverInfo``."""
    stamped = {"resultType": "complete", **result}
    if method in _CACHEABLE:
        ttl = getattr(conn.app, "cache_ttl_ms", 0)
        stamped.setdefault("ttlMs", ttl if isinstance(ttl, int) else 0)
        stamped.setdefault("cacheScope", "private")
    meta = dict(stamped.get("_meta") or {})
    meta.setdefault(SERVER_INFO_KEY, conn.app.server_info())
    stamped["_meta"] = meta
    return stamped
