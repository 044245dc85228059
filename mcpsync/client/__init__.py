"""The client layer: :class:`Client`, the blocking, typed API users call.

It owns a connection's lifecycle (:mod:`.connection`), the era negotiation that returns a
record (:mod:`.negotiate`), the policy chain every request goes through (:mod:`.policies`:
interceptors, retries, tracing), the MCP feature methods (:mod:`.features`, :mod:`.tasks`,
:mod:`.skills`), the ``input_required`` rounds of a modern server (:mod:`.input_required`),
the roots/sampling/elicitation handlers that answer what a server asks (:mod:`.server_requests`),
subscriptions, the result cache and the options.  Inside the package, imports form no cycle:
a module that needs something of the client or the connection names it in a small
``Protocol`` (``negotiate.Link``, ``policies.Channel``, ``task_handle.TaskClient``).

May import: transports, auth, rpc, types, exceptions; never the CLI, testing or contrib.
"""

from __future__ import annotations

from mcpsync.client.client import Client, Handle, PendingCall

__all__ = ["Client", "Handle", "PendingCall"]
