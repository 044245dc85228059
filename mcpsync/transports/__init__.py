"""Transports: the byte-moving layer under :class:`mcpsync.Client`.

A transport moves whole JSON-RPC messages, each by the call's deadline; it knows nothing
of ids, futures or MCP methods.  See :class:`~mcpsync.transports.base.Transport`.

May import: :mod:`mcpsync.rpc`, :mod:`mcpsync.types`, :mod:`mcpsync.exceptions`; never the
client.  Each transport (stdio, http, websocket, memory) is independent of the others.
"""

from __future__ import annotations

from .base import CloseHandler, MessageHandler, Transport, encode_message

__all__ = ["CloseHandler", "MessageHandler", "Transport", "encode_message"]
