"""Compatibility path: the legacy HTTP+SSE transport lives in :mod:`mcpsync.transports.http.legacy`."""

from __future__ import annotations

from mcpsync.transports.http.legacy import AutoHTTPTransport, LegacySSETransport

__all__ = ["AutoHTTPTransport", "LegacySSETransport"]
