"""An in-memory cache of list and read results, honouring the modern era's hints.

A 2026-07-28 server may mark a result cacheable with ``ttlMs`` (and
``cacheScope``).  We keep such results for that long, per client: one client
is one authorization context, so ``"private"`` and ``"public"`` results are
both safe to reuse here.  ``list_changed`` and ``resources/updated``
notifications drop the affected entries early.  Results without ``ttlMs``
(every handshake-era result) are never cached.  A notification can overtake the
reply of a request in flight (the server changed its list after answering), so a
result is kept only if no invalidation ran since its request was sent
(:attr:`ResultCache.generation`).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Hashable

__all__ = ["ResultCache", "INVALIDATES"]

#: Which cached methods a notification makes stale.
INVALIDATES = {"notifications/tools/list_changed": ("tools/list",),
               "notifications/prompts/list_changed": ("prompts/list",),
               "notifications/resources/list_changed": ("resources/list", "resources/templates/list")}
_MAX_ENTRIES = 1024


class ResultCache:
    """Raw results by ``(method, key)``, each kept for its own ``ttlMs``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, Hashable], tuple[float, dict[str, Any]]] = {}
        #: Bumped by every invalidation; read before a request, handed back to :meth:`put`.
        self.generation = 0

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (a parent thread may have held this one at the fork)."""
        self._lock = threading.Lock()

    def get(self, method: str, key: Hashable) -> dict[str, Any] | None:
        with self._lock:
            entry = self._entries.get((method, key))
            if entry is None:
                return None
            expires, raw = entry
            if expires <= self._clock():
                del self._entries[(method, key)]
                return None
            return raw

    def put(self, method: str, key: Hashable, raw: dict[str, Any], generation: int) -> None:
        """Keep *raw* for its ``ttlMs``, unless an invalidation ran since *generation* was read."""
        ttl = raw.get("ttlMs")
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0:
            return
        with self._lock:
            if generation != self.generation:
                return  # stale already: a list_changed overtook this reply
            if len(self._entries) >= _MAX_ENTRIES:
                self._entries.clear()  # a crude bound beats unbounded growth
            self._entries[(method, key)] = (self._clock() + ttl / 1000.0, raw)

    def invalidate(self, notification: str, params: dict[str, Any]) -> None:
        """Drop what *notification* says has changed."""
        with self._lock:
            self.generation += 1
            if notification == "notifications/resources/updated":
                self._entries.pop(("resources/read", params.get("uri")), None)
                return
            methods = INVALIDATES.get(notification, ())
            for entry in [k for k in self._entries if k[0] in methods]:
                del self._entries[entry]

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self._entries.clear()
