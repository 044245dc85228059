"""The named daemon threads of one HTTP transport: started, tracked, joined on close."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Workers"]

log = logging.getLogger("mcpsync.transports.http.streamable")


class Workers:
    """Start threads named ``mcpsync-http-<kind>-<n>.<i>``; :meth:`join` waits for them, bounded."""

    def __init__(self, n: int) -> None:
        self._n = n
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()

    def spawn(self, target: Callable[..., None], *args: Any, name: str) -> threading.Thread:
        """Run ``target(*args)`` on a new daemon thread; an exception is logged, never lost."""
        thread = threading.Thread(
            target=self._run, args=(target, *args), daemon=True,
            name=f"mcpsync-http-{name}-{self._n}.{next(self._ids)}",
        )
        # Started under the lock: join() never sees a registered thread that is not running
        # yet (joining one raises RuntimeError); start() returns before the target runs.
        with self._lock:
            self._threads.add(thread)
            thread.start()
        return thread

    def _run(self, target: Callable[..., None], *args: Any) -> None:
        try:
            target(*args)
        except BaseException:  # a reader never dies silently
            log.exception("HTTP stream reader failed")
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def join(self, budget: float) -> None:
        """Wait for every thread but the current one, *budget* seconds for all of them."""
        current = threading.current_thread()
        with self._lock:
            threads = list(self._threads)
        until = time.monotonic() + budget
        for thread in threads:
            if thread is not current:
                thread.join(timeout=max(0.0, until - time.monotonic()))
