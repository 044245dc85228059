"""Started once, never after ``close()``: the state the stdio and WebSocket transports share.

Both run threads of their own and shut down in steps, so each keeps a :class:`RunState`:
the lock their state changes take, ``closing`` (set when the shutdown begins, by
``close()`` or a failure, with the reason in ``close_exc``), ``done`` (set when it has
finished) and ``forked`` (set in a forked child, whose OS handles are the parent's).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import sys
import threading
from collections.abc import Iterator

from mcpsync.exceptions import ClientClosed, ConnectionClosed, ForkedClientError
from mcpsync.transports.base import CloseHandler

__all__ = ["RunState", "join_thread"]

log = logging.getLogger(__name__)


def join_thread(thread: threading.Thread | None, timeout: float) -> None:
    """Join *thread* for at most *timeout* seconds; not when it is the calling thread, nor
    during interpreter finalization (a join then raises ``PythonFinalizationError`` on 3.14)."""
    if thread is not None and thread is not threading.current_thread() and not sys.is_finalizing():
        thread.join(max(0.0, timeout))


class RunState:
    """Whether a transport started, is closing, is done; why it closed; and the lock that orders them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.closing = threading.Event()
        self.done = threading.Event()
        self.started = False
        self.forked = False
        self.close_exc: ConnectionClosed | None = None
        self.on_close: CloseHandler | None = None

    @property
    def closed(self) -> bool:
        """Whether the connection is closed or closing (or the parent's, in a forked child)."""
        return self.closing.is_set() or self.forked

    @contextlib.contextmanager
    def starting(self, name: str, on_close: CloseHandler) -> Iterator[None]:
        """Run the block that opens the connection: only once, never after close(), and
        closed (and done) if it fails.

        :raises RuntimeError: on a second start.
        :raises ClientClosed: when close() came first.
        """
        with self.lock:
            if self.started:
                raise RuntimeError(f"{name}.start() may be called only once")
            if self.closing.is_set():
                raise ClientClosed("the transport was closed before it started")
            self.started = True
            self.on_close = on_close
        try:
            yield
        except BaseException:
            self.closing.set()
            self.done.set()
            raise

    def close_unstarted(self) -> bool:
        """For close(): mark a transport that never started closed and done; whether it was so."""
        with self.lock:
            if not self.started:
                self.closing.set()
                self.done.set()
        return not self.started

    def enter_closing(self, exc: ConnectionClosed) -> bool:
        """Enter the closing state for *exc*; ``False`` if someone else got there first."""
        with self.lock:
            if self.closing.is_set():
                return False
            self.close_exc = exc
            self.closing.set()
        return True

    def report(self, exc: ConnectionClosed, describe: str) -> None:
        """Call ``on_close`` with *exc*; a callback that raises is logged."""
        if self.on_close is not None:
            try:
                self.on_close(exc)
            except Exception:
                log.exception("on_close callback of %s raised", describe)

    def check_not_forked(self, describe: str) -> None:
        """:raises ForkedClientError: in a forked child."""
        if self.forked:
            raise ForkedClientError(f"this {describe} connection belongs to the parent process; "
                                    "a forked child must open its own client")

    def closed_error(self) -> ConnectionClosed:
        """The error for a message sent after the close: :class:`ClientClosed`, or a copy of
        the reason, chained to it."""
        exc = self.close_exc
        if exc is None or isinstance(exc, ClientClosed):
            return ClientClosed("client closed")
        fresh = copy.copy(exc)
        fresh.outcome_unknown = False  # this message never went out
        fresh.__cause__ = exc
        return fresh
