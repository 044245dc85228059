"""The HTTP transports: Streamable HTTP (:mod:`.streamable`), legacy HTTP+SSE
(:mod:`.legacy`) and the ``"auto"`` transport (:mod:`.auto`), chosen by :mod:`.factory`.

Shared by both: :mod:`.base` (the URL, session and limits; every exchange, bounded by the
call's deadline and abortable from any thread through :mod:`.interrupt`), :mod:`.wire`
(``requests`` plumbing: redirects, typed errors, redaction), :mod:`.body` (bodies read
against a cap, gzip/deflate), :mod:`.sse_parser` (WHATWG ``text/event-stream``) and
:mod:`.streams` (the one path from an SSE stream to delivered messages).  What the
transport mirrors of MCP into headers is all in :mod:`.headers`.  The fast path, named for
what it buys (see docs/threading.rst): :mod:`.fast_send` (one cheap request).

May import: :mod:`mcpsync.transports.base`, auth (as a requests auth object), rpc, types,
exceptions.
"""

from __future__ import annotations

from mcpsync.transports.http.factory import http_transport_factory
from mcpsync.transports.http.streamable import FallbackToLegacy, StreamableHTTPTransport

__all__ = ["FallbackToLegacy", "StreamableHTTPTransport", "http_transport_factory"]
