"""Deadlines and short-lived worker threads, for work done on a caller's behalf.

A caller waits on the returned future only until its own deadline; the thread
goes on (bounded by the timeouts of what it runs) and its result or exception
lands in the future either way, never lost and never raised on a thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from mcpsync.client.options import DEFAULT, Default

__all__ = ["budget", "deadline_of", "remaining", "spawn"]

T = TypeVar("T")


def deadline_of(timeout: float | None) -> float | None:
    """The monotonic deadline of a call that may take *timeout* seconds (``None``: none)."""
    return None if timeout is None else time.monotonic() + timeout


def remaining(deadline: float | None) -> float | None:
    """Seconds left until *deadline* (at least 1 ms, so a late call still times out cleanly)."""
    return None if deadline is None else max(0.001, deadline - time.monotonic())


def budget(deadline: float | None) -> float | Default:
    """The ``timeout=`` for a client call: the time left, or the client's default if no deadline."""
    return DEFAULT if deadline is None else max(0.001, deadline - time.monotonic())


def spawn(name: str, fn: Callable[[], T]) -> Future[T]:
    """Run *fn* on a new daemon thread named ``mcpsync-<name>``; its future."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            result = fn()
        except BaseException as exc:  # handed to the waiting caller, never lost
            future.set_exception(exc)
        else:
            future.set_result(result)

    threading.Thread(target=run, name=f"mcpsync-{name}", daemon=True).start()
    return future
