"""Run user callbacks on worker threads, never on a reader thread.

A :class:`Dispatcher` is a bounded queue drained by named daemon worker
threads.  Reader threads only *enqueue*, so a slow or blocking callback can
never stall replies, and a callback may call the client again.  When the queue
is full the newest item is dropped and counted (:attr:`Dispatcher.dropped`):
memory stays bounded under a notification flood.
"""

from __future__ import annotations

import itertools
import logging
import queue
import sys
import threading
import time
from typing import Any, Callable

__all__ = ["Dispatcher", "ExceptionHandler"]

log = logging.getLogger(__name__)

#: Receives exceptions raised by user callbacks.
ExceptionHandler = Callable[[BaseException], None]

_STOP = object()
_counter = itertools.count(1)
_WARN_INTERVAL = 5.0


class Dispatcher:
    """A bounded callback queue with *workers* named daemon threads.

    With one worker, callbacks run in the order they were submitted.

    :param name: thread name prefix, e.g. ``"mcpsync-dispatch"``.
    :param maxsize: queue bound; beyond it new items are dropped and counted.
    :param exception_handler: receives callback exceptions; default logs them.
    """

    def __init__(self, name: str, *, workers: int = 1, maxsize: int = 10_000,
                 exception_handler: ExceptionHandler | None = None) -> None:
        self._name = name
        self._workers = workers
        self._queue: queue.Queue[Any] = queue.Queue(maxsize)
        self._exception_handler = exception_handler
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stopped = False
        self._last_warning = 0.0
        #: Items dropped because the queue was full.
        self.dropped = 0

    def _ensure_started(self) -> None:
        # Threads start on first use: nothing is spawned at construction or import.
        if len(self._threads) >= self._workers:
            return
        with self._lock:
            if self._stopped:
                return
            while len(self._threads) < self._workers:
                thread = threading.Thread(target=self._run, name=f"{self._name}-{next(_counter)}", daemon=True)
                thread.start()
                self._threads.append(thread)

    def submit(self, func: Callable[..., Any], *args: Any) -> bool:
        """Queue ``func(*args)``; returns ``False`` if it was dropped."""
        if self._stopped:
            return False
        self._ensure_started()
        try:
            self._queue.put_nowait((func, args))
        except queue.Full:
            self.dropped += 1
            now = time.monotonic()
            if now - self._last_warning > _WARN_INTERVAL:
                self._last_warning = now
                log.warning("%s queue is full: dropped %d callback(s) so far; a callback is too slow", self._name,
                            self.dropped)
            return False
        return True

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            func, args = item
            try:
                func(*args)
            except BaseException as exc:  # a callback must never kill its worker
                self.report(exc)

    def report(self, exc: BaseException) -> None:
        """Hand an exception from user code to the exception handler (or the log)."""
        if self._exception_handler is not None:
            try:
                self._exception_handler(exc)
                return
            except BaseException:
                log.exception("exception_handler raised")
        log.error("a callback raised", exc_info=exc)

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the workers; callbacks still queued are discarded.

        Bounded by *timeout*.  Safe to call from a worker (it does not wait for
        itself).  Idempotent.
        """
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            threads = list(self._threads)
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        for _ in threads:
            try:
                self._queue.put(_STOP, timeout=timeout)
            except queue.Full:
                break
        deadline = time.monotonic() + timeout
        current = threading.current_thread()
        for thread in threads:
            # A join during interpreter finalization raises on Python 3.14: skip it then.
            if thread is not current and not sys.is_finalizing():
                thread.join(max(0.0, deadline - time.monotonic()))
