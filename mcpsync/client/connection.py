"""One live connection: transport + session + callback workers + era.

The client's lifecycle (:mod:`mcpsync.client.lifecycle`) owns at most one
:class:`Connection` at a time and replaces it after a fork or once it died.  Opening
a connection picks the protocol era (:mod:`mcpsync.client.negotiate`).  Everything
here that runs user code does so on a :class:`~mcpsync.rpc.dispatcher.Dispatcher`
worker, never on the transport's reader thread.
"""

from __future__ import annotations

import functools
import logging
import threading
from concurrent.futures import Future, InvalidStateError
from typing import TYPE_CHECKING, Any

from mcpsync import types
from mcpsync.client.listeners import Listeners, Router
from mcpsync.client.negotiate import Negotiated, handshake, modern_meta, negotiate, rejection, reprobe
from mcpsync.client.options import ClientOptions
from mcpsync.client.server_requests import answer_server_request
from mcpsync.client.subscriptions import LIST_CHANGED, Subscription
from mcpsync.exceptions import (ClientClosed, ConnectionClosed, McpError, MethodNotFound, ProtocolError, ServerError,
                                ServerStartError, SessionExpired)
from mcpsync.rpc.deadline import Deadline
from mcpsync.rpc.dispatcher import Dispatcher
from mcpsync.rpc.session import PendingRequest, Session
from mcpsync.transports.base import Transport

if TYPE_CHECKING:
    from mcpsync.client.policies import Policies
    from mcpsync.client.task_store import ClientTaskStore

__all__ = ["Connection"]

log = logging.getLogger(__name__)

#: Seconds :meth:`Connection.close` waits, in all, for its sender and worker threads.
_JOIN_BOUND = 0.5


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

    def __init__(self, transport: Transport, options: ClientOptions, listeners: Listeners, policies: Policies) -> None:
        self.transport = transport
        #: The client's interceptors, retries and tracing (:mod:`mcpsync.client.policies`).
        self.policies = policies
        self.options = options
        self.notifications = Dispatcher("mcpsync-dispatch", maxsize=options.max_queued_notifications,
                                        exception_handler=options.exception_handler)
        self.handlers = Dispatcher("mcpsync-handler", workers=options.handler_workers,
                                   exception_handler=options.exception_handler)
        #: Hands an exception from user code to ``exception_handler`` (or the log).
        self.report = self.handlers.report
        self.session = Session(transport.send, on_notification=self._on_notification,
                               on_request=self._on_request, on_progress=self._on_progress)
        self.router = Router(listeners, self.notifications.submit, options.logging_handler, self.session.settle)
        #: The tasks this client runs for a handshake-era server (``serve_tasks=True``).
        self.task_store: ClientTaskStore | None = None
        if options.serve_tasks:  # imported only then: it costs a cold start ~10 ms (secrets, datetime)
            from mcpsync.client.task_store import ClientTaskStore

            self.task_store = ClientTaskStore(self.handlers.submit, functools.partial(answer_server_request, options),
                                              self.report)
        # Server requests a handler is still answering: only these can be cancelled, so a
        # server cancelling ids it never sent cannot grow _cancelled_requests.
        self._handling: set[int | str] = set()
        self._cancelled_requests: set[int | str] = set()
        self._lock = threading.Lock()
        #: MRTR and task input handlers running or queued (close() fails them).
        self._handler_futures: set[Future[dict[str, Any]]] = set()
        #: ``"legacy"`` (initialize handshake) or ``"modern"`` (stateless).
        self.era = "legacy"
        self.protocol_version = ""
        self.capabilities = types.ServerCapabilities()
        #: All the negotiation agreed on (the server's info, instructions, discover result).
        self.agreed = Negotiated("legacy", "", self.capabilities, types.Implementation("", ""), None)
        #: The modern era's per-request log level (``None``: no log messages).
        self.log_level: str | None = "info" if options.logging_handler is not None else None
        #: Set while the era comes from ``prior_discover=`` and no request confirmed it yet.
        self.prior_unconfirmed = False
        #: Bumped when a re-probe replaced the era, or a re-initialize the session.
        self.generation = 0
        self.renegotiate_lock = threading.RLock()  # the re-probe itself goes through the policies
        self._closer: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------

    def open(self, deadline: Deadline) -> None:
        """Start the transport and agree on an era and a protocol version, by *deadline*.

        A failure that leaves the server running (a timeout, a refused version) returns
        at once: the server is stopped on a short-lived thread (:meth:`close_soon`), so
        the caller does not pay for its shutdown.

        :raises ServerStartError: if the server cannot be started or dies first.
        :raises UnsupportedProtocolVersion: if we share no protocol version.
        """
        self.transport.start(self.session.feed, self._on_transport_closed)
        try:
            self._apply(negotiate(self, deadline))
        except ConnectionClosed as exc:
            if isinstance(exc, ClientClosed):
                # close() was called, and whoever called it waits for the shutdown: the
                # connecting caller is released now, not when the server has stopped.
                self.close_soon()
                raise
            self.close()
            raise ServerStartError(f"could not connect: {exc.message}", exit_code=exc.exit_code,
                                   stderr_tail=exc.stderr_tail) from exc
        except BaseException:
            self.close_soon()
            raise
        info = self.agreed.server_info
        log.info("connected to %s %s (protocol %s) over %s", info.name, info.version, self.protocol_version,
                 self.transport.describe())

    @property
    def alive(self) -> bool:
        """Whether the connection still carries requests (not closed, its transport not dead)."""
        return self.session.closed is None

    def close(self) -> None:
        """Fail pending calls, close the transport, stop the workers; bounded."""
        self.session.fail_all(ClientClosed("client closed"))
        with self._lock:
            handler_futures = list(self._handler_futures)
        for future in handler_futures:
            _settle(future, None, ClientClosed("client closed"))
        self.router.end_all()
        try:
            self.transport.close()
        finally:
            # One short bound for all the joins: a detached send's exchange ends with the
            # transport, but a stuck send or a blocking user callback must not hold close().
            joins = Deadline(_JOIN_BOUND)
            self.session.join_senders(joins.remaining() or 0.0)
            self.notifications.stop(joins.remaining() or 0.0)
            self.handlers.stop(joins.remaining() or 0.0)

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

    def set_modern_meta(self) -> None:
        """Recompute the ``_meta`` every modern request carries (e.g. after a log level change)."""
        if self.era == "modern":
            self.session.default_meta = modern_meta(self.options, self.protocol_version, self.log_level)

    # -- the era and the session -------------------------------------------------

    def _apply(self, agreed: Negotiated) -> None:
        """Take the era, version and server description the negotiation agreed on."""
        self.era = self.router.era = agreed.era
        self.protocol_version = agreed.protocol_version
        self.capabilities = agreed.capabilities
        self.agreed = agreed
        self.prior_unconfirmed = agreed.from_prior
        if agreed.era == "modern":
            self.set_modern_meta()
        else:
            self.session.default_meta = None

    def renegotiated(self, exc: BaseException, generation: int, deadline: Deadline) -> bool:
        """Whether a request sent at *generation* that failed with *exc* should be resent.

        True when another thread renegotiated since; else, when *exc* says the server lost
        our HTTP session, after one re-initialize (shared by every thread that saw it); or
        when the era came from ``prior_discover=``, no request confirmed it yet and *exc*
        looks like a rejection of it, after probing again (once per connection, as the
        spec allows after a version mismatch).
        """
        left = deadline.remaining()
        if not self.renegotiate_lock.acquire(timeout=-1 if left is None else left):
            raise deadline.expired("another thread is renegotiating the connection and did not finish")
        try:
            if self.generation != generation:
                return True  # sent before a re-probe or re-initialize: resend on the new one
            if isinstance(exc, SessionExpired):
                if not self.alive:
                    raise ClientClosed("client closed")  # a session made now would never be deleted
                log.info("the server lost the session; re-initializing")
                try:
                    self._apply(handshake(self, self.options.offered_versions(), deadline))
                except ConnectionClosed as failed:
                    raise SessionExpired(404, f"session expired and re-initializing failed: {failed}") from failed
                self.generation += 1
                return True
            if not self.prior_unconfirmed or not rejection(exc):
                return False
            self.prior_unconfirmed = False
            log.info("the server rejected the remembered protocol era (%s); probing again", type(exc).__name__)
            try:
                agreed = reprobe(self, exc, deadline)
            except BaseException:
                # Keep sending on the remembered era: the server's own answers say what is wrong.
                self.set_modern_meta()
                raise
            self._apply(agreed)
            self.generation += 1
            return True
        finally:
            self.renegotiate_lock.release()

    # -- subscriptions -------------------------------------------------------

    def listen(self, sub: Subscription, deadline: Deadline, meta: dict[str, Any] | None = None) -> Subscription:
        """Send ``subscriptions/listen`` for *sub* and wait for the acknowledgement.

        The request is sent detached: its response stream lasts as long as the subscription.

        :param meta: ``_meta`` entries of this request (e.g. extensions it declares).
        """
        params: dict[str, Any] = {"notifications": types.to_wire(sub.filter)}
        if meta:
            params["_meta"] = meta
        # The stream outlives this call, so its request has no deadline: it is sent on a session
        # thread (which close() ends), and this caller waits for the acknowledgement by its own.
        pending = self.session.request("subscriptions/listen", params, Deadline(None), detach=True)
        sub._bind(pending)
        self.router.add(sub)
        if not sub.wait_acknowledged(deadline.remaining()):
            sub.close()
            raise deadline.expired("server did not acknowledge subscriptions/listen", "subscriptions/listen")
        if sub.error is not None:
            self.remove_subscription(sub)
            if self.router.background is sub and isinstance(sub.error, MethodNotFound):
                # on() callbacks are best effort, as in the handshake era, where a server
                # without list_changed support simply never sends the notifications.
                log.warning("server does not serve subscriptions/listen: on() callbacks will not fire")
                return sub
            raise sub.error
        return sub

    def sync_background(self, methods: set[str], uris: set[str], deadline: Deadline) -> None:
        """Keep the background ``subscriptions/listen`` stream (it feeds ``on()`` callbacks)
        asking for what *methods* and resource *uris* want; nothing wanted: no stream."""
        every = "*" in methods
        flags: dict[str, Any] = {flag: True for method, flag in LIST_CHANGED.items() if every or method in methods}
        filt = types.SubscriptionFilter(resource_subscriptions=sorted(uris) or None, **flags)
        old = self.router.background
        if old is not None and not old.closed and old.filter == filt:
            return
        self.router.background = None
        if filt != types.SubscriptionFilter():
            self.router.background = Subscription(filt, on_close=self.remove_subscription, queue_notifications=False)
            self.listen(self.router.background, deadline)
        if old is not None:
            old.close()

    def remove_subscription(self, sub: Subscription) -> None:
        self.router.remove(sub)
        if sub._pending is not None:
            self.session.cancel(sub._pending, "subscription closed")

    # -- from the server -----------------------------------------------------

    def _on_progress(self, pending: PendingRequest, params: dict[str, Any]) -> None:
        callback = pending.on_progress
        progress = params.get("progress")
        if callback is None or isinstance(progress, bool) or not isinstance(progress, (int, float)):
            return
        total = params.get("total")
        total_f = float(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else None
        message = params.get("message")
        self.notifications.submit(callback, float(progress), total_f, message if isinstance(message, str) else None)

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            if not isinstance(request_id, bool) and isinstance(request_id, (int, str)):
                with self._lock:
                    if request_id in self._handling:
                        self._cancelled_requests.add(request_id)
                self.router.cancelled(request_id)
        self.router.route(method, params)

    def run_handler(self, method: str, params: dict[str, Any]) -> Future[dict[str, Any]]:
        """Answer a server request (legacy, or an MRTR input request) on a handler worker.

        :meth:`close` fails the futures not settled yet (a queued job is dropped by the
        workers' stop), so a caller waiting for one is released.
        """
        future: Future[dict[str, Any]] = Future()

        def run() -> None:
            try:
                store = self.task_store
                if store is not None and store.handles(method, params):
                    outcome = store.answer(method, params)
                else:
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
        self.run_handler(method, params).add_done_callback(functools.partial(self._respond, request_id))

    def _respond(self, request_id: int | str, future: Future[dict[str, Any]]) -> None:
        result: dict[str, Any] | None = None
        error: tuple[int, str, Any] | None = None
        try:
            result = future.result()
        except ServerError as exc:
            error = (exc.code, exc.message, exc.data)
        except ProtocolError as exc:
            error = (-32602, f"invalid params: {exc}", None)
        except McpError as exc:
            error = (-32603, str(exc), None)
        except Exception as exc:
            # User handler failures are reported locally; the server only learns that the
            # handler failed, not its (possibly sensitive) message.
            self.report(exc)
            error = (-32603, f"client handler failed ({type(exc).__name__})", None)
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
