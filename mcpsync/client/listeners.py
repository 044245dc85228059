"""Where a server's notifications go: ``on()`` callbacks, subscriptions, the log.

:class:`Listeners` holds the :meth:`~mcpsync.Client.on` callbacks of a client (they
outlive its connections); :class:`Router` sends one connection's notifications to
them, to its :class:`~mcpsync.client.subscriptions.Subscription` streams (tagged with
their request id in 2026-07-28, filtered by method in the handshake era) and server
log messages to the ``logging_handler`` or the ``mcpsync.server`` logger.  Everything
that runs user code is queued on the connection's dispatcher, never run on the reader.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from mcpsync import types
from mcpsync.client.subscriptions import LIST_CHANGED, Subscription, subscription_id, wanted_by
from mcpsync.exceptions import ProtocolError, RequestCancelled
from mcpsync.rpc.reply import normalize_id

__all__ = ["Handle", "Listeners", "Router"]

log = logging.getLogger(__name__)
server_log = logging.getLogger("mcpsync.server")

Callback = Callable[[dict[str, Any]], Any]
_LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO, "warning": logging.WARNING,
               "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL,
               "emergency": logging.CRITICAL}
_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
_UPDATED = "notifications/resources/updated"
_EARLY_LIMIT = 64


class Listeners:
    """Notification callbacks by method, shared by successive connections."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_method: dict[str, list[Callback]] = {}
        #: Called (without the lock) whenever the set of methods changes.
        self.on_change: Callable[[], None] | None = None

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (a parent thread may have held this one at the fork)."""
        self._lock = threading.Lock()

    def add(self, method: str, callback: Callback) -> Handle:
        with self._lock:
            self._by_method.setdefault(method, []).append(callback)
        if self.on_change is not None:
            self.on_change()
        return Handle(self, method, callback)

    def remove(self, method: str, callback: Callback) -> None:
        with self._lock:
            callbacks = self._by_method.get(method, [])
            if callback in callbacks:
                callbacks.remove(callback)

    def get(self, method: str) -> list[Callback]:
        with self._lock:
            return list(self._by_method.get(method, ())) + list(self._by_method.get("*", ()))

    def methods(self) -> set[str]:
        with self._lock:
            return {method for method, callbacks in self._by_method.items() if callbacks}


class Handle:
    """Returned by :meth:`Client.on`; :meth:`remove` unregisters the callback."""

    def __init__(self, listeners: Listeners, method: str, callback: Callback) -> None:
        self._listeners = listeners
        self.method = method
        self.callback = callback

    def remove(self) -> None:
        """Stop calling the callback; idempotent."""
        self._listeners.remove(self.method, self.callback)


class Router:
    """One connection's notifications, to callbacks and streams (thread-safe).

    :param listeners: the client's ``on()`` callbacks.
    :param submit: queues ``fn(*args)`` on the connection's dispatcher.
    :param logging_handler: gets server log messages (``None``: the ``mcpsync.server`` logger).
    :param settle: ends a stream's pending ``subscriptions/listen`` request with an error.
    """

    def __init__(self, listeners: Listeners, submit: Callable[..., bool], logging_handler: Callable[[Any], Any] | None,
                 settle: Callable[[Any, BaseException], bool]) -> None:
        self._listeners = listeners
        self._submit = submit
        self._logging_handler = logging_handler
        self._settle = settle
        self._lock = threading.Lock()
        self._subscriptions: list[Subscription] = []
        #: Tagged notifications whose stream is not registered yet (or any more).
        self._early: deque[tuple[object, str, dict[str, Any]]] = deque(maxlen=_EARLY_LIMIT)
        #: ``"modern"``: notifications name their stream; else every stream filters all of them.
        self.era = "legacy"
        #: The listen stream that feeds :meth:`Client.on` callbacks in the modern era.
        self.background: Subscription | None = None
        #: Set by the client: drops cached results when the server says they changed.
        self.on_invalidate: Callable[[str, dict[str, Any]], None] | None = None

    def route(self, method: str, params: dict[str, Any]) -> None:
        """Hand one notification on (the reader thread: never blocks, never runs user code)."""
        if method == "notifications/message":
            self._submit(self._deliver_log, params)
        for_listeners = True
        if method in LIST_CHANGED or method in (_UPDATED, _ACKNOWLEDGED):
            if method != _ACKNOWLEDGED and self.on_invalidate is not None:
                self.on_invalidate(method, params)
            for_listeners = self._to_streams(method, params)
        if for_listeners and method != _ACKNOWLEDGED:
            self._to_listeners(method, params)

    def _to_listeners(self, method: str, params: dict[str, Any]) -> None:
        for callback in self._listeners.get(method):
            self._submit(callback, params)

    def cancelled(self, request_id: int | str) -> None:
        """The server ended request *request_id*: on stdio a modern server ends a listen stream so."""
        key = normalize_id(request_id)
        with self._lock:
            ended = [sub for sub in self._subscriptions if sub.id == key]
        for sub in ended:
            if sub._pending is not None:
                self._settle(sub._pending, RequestCancelled("server ended the subscription"))

    # -- streams ---------------------------------------------------------------

    def add(self, sub: Subscription) -> None:
        """Register *sub* (bound to its request first, in the modern era) and replay what came early."""
        with self._lock:
            self._subscriptions.append(sub)
            # A reply stream (HTTP) may deliver the acknowledgement before we got
            # here: replay what arrived early for this stream.
            early = [(m, p) for key, m, p in self._early if key == sub.id] if sub.id is not None else []
            if early:
                self._early = deque((e for e in self._early if e[0] != sub.id), maxlen=_EARLY_LIMIT)
        for method, params in early:
            if self._deliver_tagged(sub, method, params) and method != _ACKNOWLEDGED:
                self._to_listeners(method, params)

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subscriptions:
                self._subscriptions.remove(sub)

    def end_all(self) -> None:
        with self._lock:
            subscriptions, self._subscriptions = self._subscriptions, []
        for sub in subscriptions:
            sub._ended(None)

    def _to_streams(self, method: str, params: dict[str, Any]) -> bool:
        """Deliver to matching streams; True when the background stream carried it (or no stream is tagged)."""
        if self.era == "modern":
            tag = subscription_id(params)
            if tag is None:
                return False
            key = normalize_id(tag)
            with self._lock:
                match = next((sub for sub in self._subscriptions if sub.id == key), None)
                if match is None:
                    self._early.append((key, method, params))
                    return False
            return self._deliver_tagged(match, method, params)
        with self._lock:
            subscriptions = list(self._subscriptions)
        for sub in subscriptions:
            if wanted_by(sub.filter, method, params):
                sub._deliver(method, params)
        return True

    def _deliver_tagged(self, sub: Subscription, method: str, params: dict[str, Any]) -> bool:
        """Hand a modern notification to its stream; True when that is the background stream."""
        if method == _ACKNOWLEDGED:
            agreed = params.get("notifications")
            sub._acknowledge(agreed if isinstance(agreed, dict) else {})
        else:
            sub._deliver(method, params)
        return sub is self.background

    # -- the server's log --------------------------------------------------------

    def _deliver_log(self, params: dict[str, Any]) -> None:
        handler = self._logging_handler
        if handler is not None:
            try:
                typed = types.from_wire(types.LoggingMessageNotificationParams, params)
            except ProtocolError as exc:
                log.warning("ignoring malformed log message from server: %s", exc)
                return
            handler(typed)
            return
        level = params.get("level")
        server_log.log(_LOG_LEVELS.get(level, logging.INFO) if isinstance(level, str) else logging.INFO,
                       "%s: %s", params.get("logger") or "server", params.get("data"))

