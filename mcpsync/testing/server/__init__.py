"""A small synchronous MCP *server* engine, behind :class:`mcpsync.testing.FakeServer` and the
demo server.  From the bottom up: the errors it answers with (:mod:`.errors`), one
2026-07-28 request's ``_meta`` and its multi round-trip answers (:mod:`.modern`), one
connection (:mod:`.connection`: JSON-RPC, server→client requests, the threads of running
calls), what a tool sees (:mod:`.context`), tasks (:mod:`.tasks`), the Python <-> wire
conversions (:mod:`.convert`), the registered features (:mod:`.registry`), the methods of both
eras (:mod:`.methods`) and serving on stdio (:mod:`.stdio`).

May import: rpc, types, exceptions, and the transports' message encoder; never the client.
"""
