"""The WebSocket transport: MCP over one WebSocket connection (``ws://`` / ``wss://``).

:mod:`.transport` is the transport; :mod:`.handshake` the opening handshake; :mod:`.reader`
the reader loop (a :class:`~.reader.FrameReader` the transport composes, given values and
callables, never the transport); :mod:`.frames` frame-level helpers over ``websocket-client``
and :class:`~.frames.WebSocketClosed`.

May import: :mod:`mcpsync.transports.base`, :mod:`mcpsync.transports.redact`, rpc, exceptions.
"""

from __future__ import annotations

from mcpsync.transports.websocket.transport import WebSocketClosed, WebSocketTransport, websocket_transport_factory

__all__ = ["WebSocketClosed", "WebSocketTransport", "websocket_transport_factory"]
