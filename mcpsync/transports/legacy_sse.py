"""Compatibility path: the legacy HTTP+SSE transport lives in :mod:`mcpsync.transports.http.legacy`,
the ``"auto"`` one in :mod:`mcpsync.transports.http.auto`."""

from __future__ import annotations

from mcpsync.transports.http.auto import AutoHTTPTransport
from mcpsync.transports.http.legacy import LegacySSETransport

__all__ = ["AutoHTTPTransport", "LegacySSETransport"]
