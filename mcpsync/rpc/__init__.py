"""JSON-RPC with no I/O: the layer every transport feeds and every client call waits on.

:mod:`.deadline` is the one time argument of a call; :mod:`.session` keeps ids and the
pending map under one lock and demultiplexes what a transport reads; :mod:`.reply` is the
one-shot outcome a caller waits on; :mod:`.dispatcher` runs user callbacks on worker
threads, never on a reader thread.

May import: :mod:`mcpsync.exceptions` and :mod:`mcpsync.types`; never a transport, the
client, or anything that does I/O.
"""
