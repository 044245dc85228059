"""Short-lived worker threads, for work done on a caller's behalf.

A caller waits on the returned future only until its own deadline; the thread goes on
(bounded by the timeouts of what it runs) and its result or exception lands in the
future either way, never lost and never raised on a thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

__all__ = ["spawn"]

T = TypeVar("T")


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
