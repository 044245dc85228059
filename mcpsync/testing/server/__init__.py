"""A small synchronous MCP *server* engine, behind :class:`mcpsync.testing.FakeServer` and the
demo server: a connection (:mod:`.connection`) answering the methods of :mod:`.methods`,
the stateless era (:mod:`.modern`), tool threads (:mod:`.tools`), serving on stdio
(:mod:`.stdio`), the registry of tools/resources/prompts (:mod:`.registry`) and the
Python <-> wire conversions (:mod:`.convert`).

May import: rpc, types, exceptions; never the client.
"""
