"""Compatibility path: the JSON-RPC engine lives in :mod:`mcpsync.rpc.session`."""

from __future__ import annotations

from mcpsync.rpc.session import PendingRequest, Reply, Session, normalize_id

__all__ = ["PendingRequest", "Reply", "Session", "normalize_id"]
