"""Notification subscriptions that look the same in both protocol eras.

In the modern era (2026-07-28) a :class:`Subscription` is an open
``subscriptions/listen`` request: the server acknowledges it, tags each
notification with the request's id, and ends it with a result (or, on stdio,
with ``notifications/cancelled``).  In the handshake era notifications flow on
the connection anyway, so a :class:`Subscription` is a filtered view of them
(resource updates are requested with ``resources/subscribe``).

Either way the user gets a blocking, bounded queue of :class:`Notification`
objects to iterate, fed by the reader thread without ever blocking it.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from mcpsync.rpc.deadline import Deadline
from mcpsync.types.modern import SUBSCRIPTION_ID_KEY, SubscriptionFilter

if TYPE_CHECKING:
    from mcpsync.rpc.session import PendingRequest

__all__ = ["LIST_CHANGED", "Notification", "Subscription", "wanted_by"]

log = logging.getLogger(__name__)

#: Notification methods a filter flag opts in to.
LIST_CHANGED = {"notifications/tools/list_changed": "tools_list_changed",
                "notifications/prompts/list_changed": "prompts_list_changed",
                "notifications/resources/list_changed": "resources_list_changed"}
_UPDATED = "notifications/resources/updated"
_END = object()


@attrs.define(frozen=True)
class Notification:
    """One notification from the server: its method and raw params."""

    method: str
    params: dict[str, Any]

    @property
    def uri(self) -> str | None:
        """The resource URI of a ``notifications/resources/updated``."""
        uri = self.params.get("uri")
        return uri if isinstance(uri, str) else None


def wanted_by(filt: SubscriptionFilter, method: str, params: dict[str, Any]) -> bool:
    """Whether a notification is one that *filt* opted in to."""
    flag = LIST_CHANGED.get(method)
    if flag is not None:
        return bool(getattr(filt, flag))
    if method == _UPDATED:
        return params.get("uri") in (filt.resource_subscriptions or ())
    return False


def subscription_id(params: dict[str, Any]) -> object:
    """The subscription a modern notification belongs to (``None`` when untagged)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    return meta.get(SUBSCRIPTION_ID_KEY)


class Subscription:
    """A stream of notifications; iterate it, or call :meth:`get`.

    Use it as a context manager so it is closed (and, in the modern era, the
    ``subscriptions/listen`` request cancelled)::

        with client.listen(tools=True, resources=["file:///notes.txt"]) as sub:
            for note in sub:
                if note.method == "notifications/tools/list_changed":
                    tools = client.list_tools()

    The queue is bounded (``maxsize``); when it is full, newer notifications
    are dropped and counted in :attr:`dropped`.
    """

    def __init__(self, filt: SubscriptionFilter, *, maxsize: int = 1000,
                 on_close: Callable[[Subscription], None] | None = None, queue_notifications: bool = True) -> None:
        #: What this subscription asked for.
        self.filter = filt
        #: What the server agreed to send (modern era; the filter itself in the legacy era).
        self.acknowledged: dict[str, Any] | None = None
        #: Notifications dropped because nobody drained the queue fast enough.
        self.dropped = 0
        self._queue: queue.Queue[Any] = queue.Queue(maxsize)
        # The client's own background stream only feeds on() callbacks.
        self._keep = queue_notifications
        self._on_close = on_close
        self._acked = threading.Event()
        self._closed = threading.Event()
        self._pending: PendingRequest | None = None
        #: Why the stream ended, if the server ended it with an error.
        self.error: BaseException | None = None

    # -- fed by the connection (reader thread: never blocks) ---------------

    @property
    def id(self) -> int | None:
        """The id of the ``subscriptions/listen`` request (modern era), else ``None``."""
        return None if self._pending is None else self._pending.id

    def _bind(self, pending: PendingRequest) -> None:
        self._pending = pending
        pending.reply.add_done_callback(lambda fut: self._ended(fut.exception()))

    def _acknowledge(self, agreed: dict[str, Any]) -> None:
        self.acknowledged = agreed
        self._acked.set()

    def _deliver(self, method: str, params: dict[str, Any]) -> None:
        if self._closed.is_set() or not self._keep:
            return
        try:
            self._queue.put_nowait(Notification(method, params))
        except queue.Full:
            self.dropped += 1
            if self.dropped in (1, 100, 10_000):
                log.warning("subscription queue full: %d notification(s) dropped", self.dropped)

    def _ended(self, error: BaseException | None) -> None:
        if error is not None and self.error is None:
            self.error = error
        self._acked.set()  # wake anyone still waiting for the acknowledgement
        if not self._closed.is_set():
            self._closed.set()
            try:
                self._queue.put_nowait(_END)
            except queue.Full:
                pass  # get() also checks _closed once the queue drains

    # -- used by the caller ------------------------------------------------

    def wait_acknowledged(self, timeout: float | None) -> bool:
        """Block until the server acknowledged the stream (or it ended)."""
        return self._acked.wait(timeout)

    @property
    def closed(self) -> bool:
        """Whether the stream has ended and nothing is left to read."""
        if not self._closed.is_set():
            return False
        with self._queue.mutex:  # the end marker itself is nothing to read
            return all(item is _END for item in self._queue.queue)

    def get(self, timeout: float | None = None) -> Notification | None:
        """The next notification; ``None`` on timeout or once the stream ended."""
        deadline = Deadline(timeout)
        while True:
            if (self._closed.is_set() and self._queue.empty()) or deadline.passed():
                return None
            try:
                # Poll in slices so a stream ended while the queue was full is noticed.
                item = self._queue.get(timeout=deadline.remaining(0.5))
            except queue.Empty:
                continue
            if item is _END:
                return None
            assert isinstance(item, Notification)
            return item

    def __iter__(self) -> Iterator[Notification]:
        while True:
            item = self.get()
            if item is None:
                return
            yield item

    def close(self) -> None:
        """End the stream; idempotent.  Iteration stops after what is queued."""
        was_open = not self._closed.is_set()
        self._ended(None)
        if was_open and self._on_close is not None:
            self._on_close(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
