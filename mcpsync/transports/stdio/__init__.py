"""The stdio transport: an MCP server run as a child process.

:mod:`.transport` is the transport (writes, lifecycle, shutdown); :mod:`.reader` its
reader thread; :mod:`.pipes` stdout framing and pipe waits; :mod:`.stderr` the shared
stderr drain; :mod:`.process` the safe environment, spawning and process-group shutdown;
:mod:`.reaper` the guardian that kills a dead host's servers.

May import: :mod:`mcpsync.transports.base`, rpc, exceptions.
"""

from __future__ import annotations

from mcpsync.transports.stdio.transport import StdioTransport

__all__ = ["StdioTransport"]
