"""The HTTP transports: Streamable HTTP (:mod:`.streamable`), legacy HTTP+SSE
(:mod:`.legacy`) and the ``"auto"`` transport (:mod:`.auto`), chosen by :mod:`.factory`.

What the transport knows of MCP methods (initialize capture, re-initialize, routing and
tool headers, stream cancellation) is all in :mod:`.mcp_rules`.  The Streamable HTTP
transport composes parts that own their state: :mod:`.inflight` (requests in flight),
:mod:`.streams` (SSE reader threads, resumption, the GET stream), :mod:`.reinit` (its own
requests), :mod:`.workers` (its threads).  Shared plumbing: :mod:`.endpoint` (what both
HTTP transports hold), :mod:`.common` (requests, redirects, errors), :mod:`.sse_parser`
(WHATWG ``text/event-stream``), :mod:`.sse_messages` (the one SSE event -> messages path),
:mod:`.track` (abortable exchanges).  Fast paths, each named for what it buys (see
docs/threading.rst): :mod:`.fast_send` (one cheap request), :mod:`.inline_reply` (a quick
SSE reply read by the caller).

May import: :mod:`mcpsync.transports.base`, auth (as a requests auth object), rpc, types,
exceptions.
"""

from __future__ import annotations

from mcpsync.transports.base import RequestErrorHandler
from mcpsync.transports.http.factory import http_transport_factory
from mcpsync.transports.http.streamable import FallbackToLegacy, StreamableHTTPTransport

__all__ = ["FallbackToLegacy", "RequestErrorHandler", "StreamableHTTPTransport", "http_transport_factory"]
