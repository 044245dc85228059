"""Scope strings and sets (RFC 6749 §3.3: space-separated, order-free)."""

from __future__ import annotations

from typing import Any

__all__ = ["join_scopes", "scope_set"]


def scope_set(value: Any) -> set[str]:
    """The scopes in a space-separated string or a list; anything else: none."""
    if isinstance(value, str):
        return set(value.split())
    if isinstance(value, (list, tuple, set, frozenset)):
        return {str(v) for v in value}
    return set()


def join_scopes(scopes: set[str]) -> str | None:
    """The ``scope`` parameter for *scopes* (sorted, so requests are reproducible); none: ``None``."""
    return " ".join(sorted(scopes)) if scopes else None
