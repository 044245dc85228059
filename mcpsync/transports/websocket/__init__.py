"""The WebSocket transport: MCP over one WebSocket connection (``ws://`` / ``wss://``).

:mod:`.transport` is the transport; :mod:`.handshake` the opening handshake; :mod:`.reader`
the reader loop; :mod:`.frames` frame-level helpers over ``websocket-client``.

May import: :mod:`mcpsync.transports.base`, rpc, exceptions.
"""

from __future__ import annotations

from mcpsync.transports.websocket.transport import (
    WebSocketClosed,
    WebSocketTransport,
    websocket_transport_factory,
)

__all__ = ["WebSocketClosed", "WebSocketTransport", "websocket_transport_factory"]
