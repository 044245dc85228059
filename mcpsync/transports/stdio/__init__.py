"""The stdio transport: an MCP server run as a child process.

:mod:`.transport` is the transport; :mod:`.reader` its reading side (reader thread and caller
reads); :mod:`.pipes` stdout framing and stderr draining; :mod:`.process` the safe
environment, spawning and process-group shutdown.

May import: :mod:`mcpsync.transports.base`, rpc, exceptions.
"""

from __future__ import annotations

from mcpsync.transports.stdio.transport import StdioTransport

__all__ = ["StdioTransport"]
