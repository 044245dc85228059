"""Tool names each provider accepts, and the way back to the MCP name.

OpenAI takes at most 64 and Anthropic at most 128 characters of
``[a-zA-Z0-9_-]``.  A name that already fits is kept as it is; any other is
made to fit (refused characters become ``_``; one that is too long, or that
would collide with another, is cut and given a hash of the original), and the
mapping is remembered per source so :func:`~mcpsync.llm.run_tool_calls` can
undo it.
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from collections.abc import Iterable
from typing import Any

OPENAI_LIMIT = 64
ANTHROPIC_LIMIT = 128
_REFUSED = re.compile(r"[^A-Za-z0-9_-]")

#: source -> limit -> the last mapping made for it (weak: a closed client goes away).
_known: weakref.WeakKeyDictionary[Any, dict[int, NameMap]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class NameMap:
    """Provider name <-> MCP tool name, for one list of tools and one length limit."""

    def __init__(self, names: Iterable[str], limit: int) -> None:
        names = list(names)
        # Names that already fit keep themselves, whatever comes after.
        self.to_provider = {name: name for name in names if name and len(name) <= limit and not _REFUSED.search(name)}
        taken = set(self.to_provider)
        for name in names:
            if name in self.to_provider:
                continue
            base = candidate = _REFUSED.sub("_", name) or "tool"
            seed = name
            while len(candidate) > limit or candidate in taken:  # taken again: a hash collision, never in practice
                seed = hashlib.sha256(seed.encode("utf-8")).hexdigest()[:8]
                candidate = f"{base[: limit - 9]}_{seed}"
            self.to_provider[name] = candidate
            taken.add(candidate)
        self.to_mcp = {provider: name for name, provider in self.to_provider.items()}


def name_map(source: Any, names: Iterable[str], limit: int) -> NameMap:
    """The mapping of *names* for *source*, remembered for :func:`known_map`."""
    mapping = NameMap(names, limit)
    with _lock:
        _known.setdefault(source, {})[limit] = mapping
    return mapping


def known_map(source: Any, limit: int) -> NameMap | None:
    """The last mapping made for *source* and *limit*, if any."""
    with _lock:
        return _known.get(source, {}).get(limit)
