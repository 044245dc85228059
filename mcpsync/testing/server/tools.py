"""``tools/call`` in the server engine: each call on its own named daemon thread.

A tool may block, wait for :attr:`~mcpsync.testing.server.context.ToolContext.cancelled`
or make a server→client request while the reader thread goes on.  The
thread is registered with its connection (a
:class:`~mcpsync.testing.server.connection.ServerConnection`, seen through
:class:`~mcpsync.testing.server.context.Peer`) before it starts, so a cancel or a lost
connection arriving at once finds it.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import Any

from mcpsync.testing.server.call import InputRequired, ModernCall
from mcpsync.testing.server.context import Peer, RpcError, ToolContext
from mcpsync.testing.server.results import stamp

__all__ = ["join_tools", "start_tool"]

_log = logging.getLogger("mcpsync.testing.server.connection")

_INVALID_PARAMS, _INTERNAL_ERROR = -32602, -32603

_thread_numbers = itertools.count(1)


def start_tool(
    conn: Peer, request_id: Any, params: dict[str, Any], call: ModernCall | None = None
) -> None:
    """Run one ``tools/call`` on a new thread; nothing once the connection is lost."""
    meta = params.get("_meta")
    ctx = ToolContext(conn, request_id, meta if isinstance(meta, dict) else {}, call)
    thread = threading.Thread(
        target=_run_tool,
        args=(conn, request_id, params, ctx),
        name=f"mcpsync-fakeserver-tool-{next(_thread_numbers)}",
        daemon=True,
    )
    with conn._lock:
        if conn._closed:
            return
        # Registered before the thread starts so a cancel arriving right away finds it.
        conn._inflight[request_id] = ctx
        conn._threads.add(thread)
    thread.start()


def _run_tool(
    conn: Peer, request_id: Any, params: dict[str, Any], ctx: ToolContext
) -> None:
    try:
        name = params.get("name")
        arguments = params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise RpcError(_INVALID_PARAMS, "tools/call needs a string name and object arguments")
        result = conn.app.call_tool(name, arguments, ctx)
        if ctx.modern is not None:
            result = stamp(conn, "tools/call", result)
    except InputRequired as needed:  # 2026-07-28: ask, and run the tool again on the retry
        assert ctx.modern is not None
        outcome: tuple[str, Any] = ("result", ctx.modern.input_required(needed))
    except RpcError as exc:
        outcome = ("error", exc)
    except Exception as exc:
        outcome = ("error", RpcError(_INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
    else:
        outcome = ("result", result)
    finally:
        with conn._lock:
            conn._inflight.pop(request_id, None)
            client_cancelled = request_id in conn._cancelled
            conn._cancelled.discard(request_id)
    try:
        if client_cancelled:
            return  # the spec says a request the client cancelled gets no response
        if outcome[0] == "error":
            conn._error(request_id, outcome[1])
        else:
            conn._respond(request_id, outcome[1])
    finally:
        # Only now, after the answer is written: join_tools must see the thread
        # until it has stopped writing, or the server may exit mid-write.
        with conn._lock:
            conn._threads.discard(threading.current_thread())


def join_tools(conn: Peer, timeout: float, *, warn: bool) -> None:
    """Wait, in total at most *timeout* seconds, for the running tool threads."""
    with conn._lock:
        threads = [t for t in conn._threads if t is not threading.current_thread()]
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
        if warn and thread.is_alive():
            _log.warning("tool thread %s still running after the client disconnected", thread.name)
