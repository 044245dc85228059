"""Started once, never after ``close()``: the state the stdio and WebSocket transports share.

Both run threads of their own and shut down in steps, so each keeps a :class:`RunState`:
the lock their state changes take, ``closing`` (set when the shutdown begins, by
``close()`` or a failure) and ``done`` (set when it has finished).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from mcpsync.exceptions import ClientClosed

__all__ = ["RunState"]


class RunState:
    """Whether a transport started, is closing, is done; and the lock that orders them."""

    __slots__ = ("closing", "done", "lock", "started")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.closing = threading.Event()
        self.done = threading.Event()
        self.started = False

    @contextlib.contextmanager
    def starting(self, name: str) -> Iterator[None]:
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
        try:
            yield
        except BaseException:
            self.closing.set()
            self.done.set()
            raise

    def close_unstarted(self) -> bool:
        """For close(): mark a transport that never started closed and done; whether it was so."""
        if not self.started:
            with self.lock:
                if not self.started:
                    self.closing.set()
                    self.done.set()
                    return True
        return False
