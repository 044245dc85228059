"""Compatibility path: the token-store contract lives in :mod:`mcpsync.testing.token_store`."""

from __future__ import annotations

from mcpsync.testing.token_store import TokenStoreContract

__all__ = ["TokenStoreContract"]
