"""The client layer: :class:`Client`, the blocking, typed API users call.

It owns a connection's lifecycle (:mod:`.connection`), the era negotiation that returns a
record (:mod:`.negotiate`), the MCP feature methods (:mod:`.features`), what a server asks of
the client (:mod:`.server_requests`), subscriptions, the result cache and the options.

May import: transports, auth, rpc, types, exceptions; never the CLI, testing or contrib.
"""

from __future__ import annotations

from mcpsync.client.client import Client, Handle, PendingCall

__all__ = ["Client", "Handle", "PendingCall"]
