"""The client layer: :class:`Client`, the blocking, typed API users call.

:mod:`.client` composes the parts: :mod:`.lifecycle` (connect on first use, fork,
reconnect after a death, close), :mod:`.connection` (one live connection: transport,
session, workers, era, server→client requests), :mod:`.negotiate` (the era, returned as a
record), :mod:`.policies` (interceptors, retries, tracing: the chain every request goes
through), :mod:`.input_required` (the rounds of a modern server), :mod:`.listeners`
(``on()`` callbacks and where notifications go) and the features, each a module of
functions over :mod:`.core`'s small protocol: :mod:`.tools`, :mod:`.resources`,
:mod:`.prompts`, :mod:`.tasks` (:mod:`.task_handle`, :mod:`.task_store`), :mod:`.skills`,
:mod:`.apps`.  Inside the package, imports form no cycle: a module that needs something of
the client or the connection names it in a small ``Protocol`` (``core.Core``,
``negotiate.Link``, ``policies.Channel``).

May import: transports, auth, rpc, types, exceptions; never the CLI, testing or contrib.
"""

from __future__ import annotations

from mcpsync.client.client import Client, Handle, PendingCall

__all__ = ["Client", "Handle", "PendingCall"]
