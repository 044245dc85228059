"""One live connection: transport + session + callback workers + era.

:class:`~mcpsync.Client` owns at most one :class:`Connection` at a time and
replaces it only after a fork.  Opening a connection picks the protocol era
(:mod:`mcpsync.client.negotiate`).  Everything here that runs user code does so on a
:class:`~mcpsync.rpc.dispatcher.Dispatcher` worker, never on the transport's
reader thread.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from concurrent.futures import Future, InvalidStateError
from typing import TYPE_CHECKING, Any, Callable

from mcpsync import types
from mcpsync.client.negotiate import Negotiated, modern_meta, negotiate, rejection, reprobe
from mcpsync.client.options import ClientOptions
from mcpsync.client.policies import Policies
from mcpsync.client.server_requests import answer_server_request
from mcpsync.client.subscriptions import LIST_CHANGED, Subscription, subscription_id, wanted_by
from mcpsync.client.tracing import RequestSpan
from mcpsync.exceptions import (
    ClientClosed,
    ConnectionClosed,
    McpError,
    MethodNotFound,
    ProtocolError,
    RequestCancelled,
    RequestTimeout,
    ServerError,
    ServerStartError,
)
from mcpsync.rpc.dispatcher import Dispatcher
from mcpsync.rpc.session import PendingRequest, Session, normalize_id
from mcpsync.transports.base import Transport

if TYPE_CHECKING:
    from mcpsync.client.task_store import ClientTaskStore

__all__ = ["Connection", "Listeners"]

log = logging.getLogger("mcpsync.client.client")
server_log = logging.getLogger("mcpsync.server")

_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
_EARLY_LIMIT = 64


class Listeners:
    """Notification callbacks by method, shared by successive connections."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_method: dict[str, list[Callable[[dict[str, Any]], Any]]] = {}
        #: Called (without the lock) whenever the set of methods changes.
        self.on_change: Callable[[], None] | None = None

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (a parent thread may have held this one at the fork)."""
        self._lock = threading.Lock()

    def add(self, method: str, callback: Callable[[dict[str, Any]], Any]) -> None:
        with self._lock:
            self._by_method.setdefault(method, []).append(callback)
        if self.on_change is not None:
            self.on_change()

    def remove(self, method: str, callback: Callable[[dict[str, Any]], Any]) -> None:
        with self._lock:
            callbacks = self._by_method.get(method, [])
            if callback in callbacks:
                callbacks.remove(callback)

    def get(self, method: str) -> list[Callable[[dict[str, Any]], Any]]:
        with self._lock:
            return list(self._by_method.get(method, ())) + list(self._by_method.get("*", ()))

    def methods(self) -> set[str]:
        with self._lock:
            return {method for method, callbacks in self._by_method.items() if callbacks}


def _settle(future: Future[dict[str, Any]], result: dict[str, Any] | None, exc: BaseException | None) -> None:
    """Settle *future* unless close() already did (the handler may finish after it)."""
    try:
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)  # type: ignore[arg-type]
    except InvalidStateError:
        pass


class Connection:
    """A transport, its session, its callback workers and what the server declared."""

    def __init__(
        self, transport: Transport, options: ClientOptions, listeners: Listeners, policies: Policies
    ) -> None:
        self.transport = transport
        #: The client's interceptors, retries and tracing (:mod:`mcpsync.client.policies`).
        self.policies = policies
        self.options = options
        self.listeners = listeners
        #: The pid that opened this connection; a different pid means we were forked.
        self.pid = os.getpid()
        self.notifications = Dispatcher(
            "mcpsync-dispatch",
            maxsize=options.max_queued_notifications,
            exception_handler=options.exception_handler,
        )
        self.handlers = Dispatcher(
            "mcpsync-handler",
            workers=options.handler_workers,
            exception_handler=options.exception_handler,
        )
        self.session = Session(
            transport.send,
            on_notification=self._on_notification,
            on_request=self._on_request,
            on_progress=self._on_progress,
        )
        # What the transport declares (mcpsync.transports.base): the send keywords it honours,
        # and whether a waiting caller may read its own reply.
        self.session.send_options = frozenset(
            name for name, honoured in (
                ("deadline", transport.bounded_send),
                ("detach", transport.detached_send),
                ("on_write_error", transport.handoff_send),
            )
            if honoured
        )
        self.session.caller_reader = transport.caller_reader()
        #: The tasks this client runs for a handshake-era server (``serve_tasks=True``).
        self.task_store: ClientTaskStore | None = None
        if options.serve_tasks:  # imported only then: it costs a cold start ~10 ms (secrets, datetime)
            from mcpsync.client.task_store import ClientTaskStore

            self.task_store = ClientTaskStore(self.handlers.submit, self._answer_request, self.report)
        self._cancelled_requests: set[int | str] = set()
        # Server requests a handler is still answering: only these can be cancelled,
        # so a server cancelling ids it never sent cannot grow _cancelled_requests.
        self._handling: set[int | str] = set()
        self._lock = threading.Lock()
        #: MRTR and task input handlers running or queued (close() fails them).
        self._handler_futures: set[Future[dict[str, Any]]] = set()
        self._subscriptions: list[Subscription] = []
        #: Tagged notifications whose stream is not registered yet (or any more).
        self._early: deque[tuple[object, str, dict[str, Any]]] = deque(maxlen=_EARLY_LIMIT)
        #: The listen stream that feeds :meth:`Client.on` callbacks in the modern era.
        self.background: Subscription | None = None
        #: Set by the client: drops cached results when the server says they changed.
        self.on_invalidate: Callable[[str, dict[str, Any]], None] | None = None
        #: Whether each request has its own response channel (HTTP), rather than
        #: all sharing one ordered stream (stdio, WebSocket); the transport declares it.
        self.independent_requests = transport.independent_requests
        #: ``"legacy"`` (initialize handshake) or ``"modern"`` (stateless).
        self.era = "legacy"
        self.protocol_version = ""
        self.server_info = types.Implementation("", "")
        self.capabilities = types.ServerCapabilities()
        self.instructions: str | None = None
        self.initialize_result: types.InitializeResult | None = None
        self.discover_result: types.DiscoverResult | None = None
        #: The modern era's per-request log level (``None``: no log messages).
        self.log_level: str | None = "info" if options.logging_handler is not None else None
        #: Set while the era comes from ``prior_discover=`` and no request confirmed it yet.
        self.prior_unconfirmed = False
        #: Bumped when a re-probe replaced the era (under :attr:`reprobe_lock`).
        self.era_generation = 0
        self.reprobe_lock = threading.RLock()  # the re-probe itself goes through the policies
        self._closer: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------

    def open(self, timeout: float | None) -> None:
        """Start the transport and agree on an era and a protocol version, within *timeout*.

        A failure that leaves the server running (a timeout, a refused
        version) returns at once: the server is stopped on a short-lived
        thread (:meth:`close_soon`), so the caller does not pay for its shutdown.

        :raises ServerStartError: if the server cannot be started or dies first.
        :raises UnsupportedProtocolVersion: if we share no protocol version.
        """
        if self.independent_requests:
            # HTTP can lose one reply stream without losing the connection; legacy HTTP+SSE
            # also opens its stream and waits for its endpoint within the connect deadline.
            deadline = None if timeout is None else time.monotonic() + timeout
            self.transport.start(
                self.session.feed, self._on_transport_closed, on_request_error=self.session.fail_request,
                deadline=deadline,
            )
        else:
            self.transport.start(self.session.feed, self._on_transport_closed)
        try:
            self._apply(negotiate(self, timeout))
        except ConnectionClosed as exc:
            if isinstance(exc, ClientClosed):
                # close() was called, and whoever called it waits for the shutdown: the
                # connecting caller is released now, not when the server has stopped.
                self.close_soon()
                raise
            self.close()
            raise ServerStartError(
                f"could not connect: {exc.message}",
                exit_code=exc.exit_code,
                stderr_tail=exc.stderr_tail,
            ) from exc
        except BaseException:
            self.close_soon()
            raise
        log.info(
            "connected to %s %s (protocol %s) over %s",
            self.server_info.name,
            self.server_info.version,
            self.protocol_version,
            self.transport.describe(),
        )

    def close(self) -> None:
        """Fail pending calls, close the transport, stop the workers; bounded."""
        self.session.fail_all(ClientClosed("client closed"))
        with self._lock:
            handler_futures = list(self._handler_futures)
        for future in handler_futures:
            _settle(future, None, ClientClosed("client closed"))
        with self._lock:
            subscriptions, self._subscriptions = self._subscriptions, []
        for sub in subscriptions:
            sub._ended(None)
        try:
            self.transport.close()
        finally:
            self.notifications.stop()
            self.handlers.stop()

    def close_soon(self) -> None:
        """Fail pending calls now and finish :meth:`close` on a short-lived thread (it is bounded)."""
        self.session.fail_all(ClientClosed("client closed"))
        try:
            self._closer = threading.Thread(target=self.close, name="mcpsync-close", daemon=True)
            self._closer.start()
        except RuntimeError:  # no new threads (interpreter exiting): close here
            self._closer = None
            self.close()

    @property
    def closing_in_background(self) -> bool:
        """Whether :meth:`close_soon`'s thread is still stopping the transport."""
        return self._closer is not None and self._closer.is_alive()

    def abandon(self) -> None:
        """Forget this connection in a forked child without touching the parent's resources."""
        self.session.after_fork()  # the parent's reader may have held its lock at the fork
        self.session.fail_all(ClientClosed("connection belongs to the parent process"))
        self.transport.forget()

    def _on_transport_closed(self, exc: BaseException) -> None:
        if not isinstance(exc, ClientClosed):
            log.info("connection lost: %s", exc)
        self.session.fail_all(exc)

    def request(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None,
                **options: Any) -> dict[str, Any]:
        """Send a request through the client's policies and wait for its raw result.

        *options* are those of :meth:`mcpsync.client.policies.Policies.request`.
        """
        return self.policies.request(self, method, params, timeout=timeout, **options)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification through the client's interceptors."""
        self.policies.notify(self, method, params)

    def intercept(
        self, method: str, params: dict[str, Any] | None, send: Callable[[dict[str, Any] | None], dict[str, Any]]
    ) -> dict[str, Any]:
        """Run the client's interceptors around *send* (the era probe's race with ``initialize``)."""
        return self.policies.intercept(method, params, send)

    def span(self, method: str, params: dict[str, Any] | None) -> RequestSpan | None:
        """A tracing span for one request on this connection (``None``: tracing is off)."""
        return self.policies.span(self, method, params)

    def set_modern_meta(self) -> None:
        """Recompute the ``_meta`` every modern request carries (e.g. after a log level change)."""
        if self.era == "modern":
            self.session.default_meta = modern_meta(self.options, self.protocol_version, self.log_level)

    # -- the era -------------------------------------------------------------

    def _apply(self, agreed: Negotiated) -> None:
        """Take the era, version and server description the negotiation agreed on."""
        self.era = agreed.era
        self.protocol_version = agreed.protocol_version
        self.capabilities = agreed.capabilities
        self.server_info = agreed.server_info
        self.instructions = agreed.instructions
        self.discover_result = agreed.discover_result
        self.initialize_result = agreed.initialize_result
        self.prior_unconfirmed = agreed.from_prior
        if agreed.era == "modern":
            self.set_modern_meta()
        else:
            self.session.default_meta = None

    def era_confirmed(self) -> None:
        """A request sent on the current era was accepted: a remembered era is now confirmed."""
        self.prior_unconfirmed = False

    def stale_prior(self, exc: BaseException, generation: int, timeout: float | None) -> bool:
        """Whether a request sent at era *generation* that failed with *exc* should be resent.

        True when the era since changed (another thread re-probed), or when the
        era came from ``prior_discover=``, no request confirmed it yet and *exc*
        looks like a rejection of it: then the server is probed again, once per
        connection, as the spec allows after a version mismatch.
        """
        with self.reprobe_lock:
            if self.era_generation != generation:
                return True  # sent on the era a re-probe replaced: resend on the new one
            if not self.prior_unconfirmed or not rejection(exc):
                return False
            self.prior_unconfirmed = False
            log.info("the server rejected the remembered protocol era (%s); probing again", type(exc).__name__)
            try:
                agreed = reprobe(self, exc, timeout)
            except BaseException:
                # Keep sending on the remembered era: the server's own answers say what is wrong.
                self.set_modern_meta()
                raise
            self._apply(agreed)
            self.era_generation += 1
            return True

    # -- subscriptions -------------------------------------------------------

    def add_subscription(self, sub: Subscription, pending: PendingRequest | None) -> None:
        if pending is not None:
            sub._bind(pending)
        with self._lock:
            self._subscriptions.append(sub)
            # A reply stream (HTTP) may deliver the acknowledgement before we got
            # here: replay what arrived early for this stream.
            early = [(m, p) for key, m, p in self._early if key == sub.id] if sub.id is not None else []
            if early:
                self._early = deque((e for e in self._early if e[0] != sub.id), maxlen=_EARLY_LIMIT)
        for method, params in early:
            if self._deliver_tagged(sub, method, params) and method != _ACKNOWLEDGED:
                for callback in self.listeners.get(method):
                    self.notifications.submit(callback, params)

    def listen(self, sub: Subscription, timeout: float | None, meta: dict[str, Any] | None = None) -> Subscription:
        """Send ``subscriptions/listen`` for *sub* and wait for the acknowledgement.

        :param meta: ``_meta`` entries of this request (e.g. extensions it declares).
        """
        params: dict[str, Any] = {"notifications": types.to_wire(sub.filter)}
        if meta:
            params["_meta"] = meta
        pending = self.session.send_request("subscriptions/listen", params)
        self.add_subscription(sub, pending)
        if not sub.wait_acknowledged(timeout):
            sub.close()
            raise RequestTimeout(
                "server did not acknowledge subscriptions/listen in time", method="subscriptions/listen"
            )
        if sub.error is not None:
            self.remove_subscription(sub)
            if self.background is sub and isinstance(sub.error, MethodNotFound):
                # on() callbacks are best effort, as in the handshake era, where a server
                # without list_changed support simply never sends the notifications.
                log.warning("server does not serve subscriptions/listen: on() callbacks will not fire")
                return sub
            raise sub.error
        return sub

    def remove_subscription(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subscriptions:
                self._subscriptions.remove(sub)
        pending = sub._pending
        if pending is not None:
            self.session.cancel(pending, "subscription closed")

    def _route_to_subscriptions(self, method: str, params: dict[str, Any]) -> bool:
        """Deliver to matching subscriptions; True when the background stream carried it."""
        with self._lock:
            subscriptions = list(self._subscriptions)
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

    # -- from the server -----------------------------------------------------

    def _on_progress(self, pending: PendingRequest, params: dict[str, Any]) -> None:
        callback = pending.on_progress
        progress = params.get("progress")
        if callback is None or isinstance(progress, bool) or not isinstance(progress, (int, float)):
            return
        total = params.get("total")
        total_f = float(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else None
        message = params.get("message")
        self.notifications.submit(
            callback, float(progress), total_f, message if isinstance(message, str) else None
        )

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message":
            self.notifications.submit(self._deliver_log, params)
        elif method == "notifications/cancelled":
            self._on_cancelled(params)
        if method in LIST_CHANGED or method == "notifications/resources/updated":
            if self.on_invalidate is not None:
                self.on_invalidate(method, params)
        for_listeners = True
        if method in LIST_CHANGED or method in ("notifications/resources/updated", _ACKNOWLEDGED):
            for_listeners = self._route_to_subscriptions(method, params)
        if for_listeners and method != _ACKNOWLEDGED:
            for callback in self.listeners.get(method):
                self.notifications.submit(callback, params)

    def _on_cancelled(self, params: dict[str, Any]) -> None:
        request_id = params.get("requestId")
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return
        key = normalize_id(request_id)
        with self._lock:
            ended = [sub for sub in self._subscriptions if sub.id == key]
            if request_id in self._handling:
                self._cancelled_requests.add(request_id)
        for sub in ended:
            # On stdio a modern server ends a listen stream this way.
            pending = sub._pending
            if pending is not None:
                self.session.settle(pending, RequestCancelled("server ended the subscription"))

    def _deliver_log(self, params: dict[str, Any]) -> None:
        handler = self.options.logging_handler
        if handler is not None:
            try:
                typed = types.from_wire(types.LoggingMessageNotificationParams, params)
            except ProtocolError as exc:
                log.warning("ignoring malformed log message from server: %s", exc)
                return
            handler(typed)
            return
        level = params.get("level")
        server_log.log(
            _LOG_LEVELS.get(level, logging.INFO) if isinstance(level, str) else logging.INFO,
            "%s: %s",
            params.get("logger") or "server",
            params.get("data"),
        )

    def run_handler(self, method: str, params: dict[str, Any]) -> Future[dict[str, Any]]:
        """Answer an MRTR input request on a handler worker, like a legacy server request.

        :meth:`close` fails the futures not settled yet (a queued job is dropped by the
        workers' stop), so a caller waiting for one is released.
        """
        future: Future[dict[str, Any]] = Future()

        def run() -> None:
            try:
                outcome = answer_server_request(self.options, method, params)
            except BaseException as exc:  # handed to the waiting caller
                _settle(future, None, exc)
            else:
                _settle(future, outcome, None)

        with self._lock:
            self._handler_futures.add(future)
        future.add_done_callback(self._handler_futures.discard)
        if not self.handlers.submit(run):
            _settle(future, None, ClientClosed("client is shutting down"))
        return future

    def _on_request(self, request_id: int | str, method: str, params: dict[str, Any]) -> None:
        with self._lock:
            self._handling.add(request_id)
        if not self.handlers.submit(self._handle_request, request_id, method, params):
            with self._lock:
                self._handling.discard(request_id)
            self.session.respond_error(request_id, -32603, "client is shutting down")

    def _answer_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return answer_server_request(self.options, method, params)

    def _handle_request(self, request_id: int | str, method: str, params: dict[str, Any]) -> None:
        try:
            store = self.task_store
            if store is not None and store.handles(method, params):
                result = store.answer(method, params)
            else:
                result = answer_server_request(self.options, method, params)
        except ServerError as exc:
            self._answer(request_id, error=(exc.code, exc.message, exc.data))
        except ProtocolError as exc:
            self._answer(request_id, error=(-32602, f"invalid params: {exc}", None))
        except McpError as exc:
            self._answer(request_id, error=(-32603, str(exc), None))
        except Exception as exc:
            # User handler failures are reported locally; the server only learns
            # that the handler failed, not its (possibly sensitive) message.
            self.report(exc)
            self._answer(request_id, error=(-32603, f"client handler failed ({type(exc).__name__})", None))
        else:
            self._answer(request_id, result=result)

    def _answer(
        self,
        request_id: int | str,
        *,
        result: dict[str, Any] | None = None,
        error: tuple[int, str, Any] | None = None,
    ) -> None:
        with self._lock:
            cancelled = request_id in self._cancelled_requests
            self._cancelled_requests.discard(request_id)
            self._handling.discard(request_id)
        if cancelled:
            return  # the server no longer wants it
        if error is not None:
            self.session.respond_error(request_id, *error)
        else:
            self.session.respond(request_id, result or {})

    def report(self, exc: BaseException) -> None:
        """Hand an exception from user code to ``exception_handler`` (or the log)."""
        handler = self.options.exception_handler
        if handler is not None:
            try:
                handler(exc)
                return
            except Exception:
                log.exception("exception_handler raised")
        log.error("a client handler raised", exc_info=exc)
