"""The HTTP transports: Streamable HTTP (:mod:`.streamable`) and legacy HTTP+SSE
(:mod:`.legacy`, with the ``"auto"`` transport), chosen by :mod:`.factory`.

Shared plumbing: :mod:`.common` (requests, redirects, errors, redaction), :mod:`.send`
(one cheap request), :mod:`.sse_parser` (WHATWG ``text/event-stream``), :mod:`.streams`
(SSE reader threads, resumption, the GET stream). What the transport knows of MCP methods
(re-initialize, per-request headers, stream cancellation) is in :mod:`.reinit`,
:mod:`.modern` and :mod:`.inflight`.

May import: :mod:`mcpsync.transports.base`, auth (as a requests auth object), rpc, types,
exceptions.
"""

from __future__ import annotations

from mcpsync.transports.base import RequestErrorHandler
from mcpsync.transports.http.factory import http_transport_factory
from mcpsync.transports.http.streamable import FallbackToLegacy, StreamableHTTPTransport

__all__ = ["FallbackToLegacy", "RequestErrorHandler", "StreamableHTTPTransport", "http_transport_factory"]
