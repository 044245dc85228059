"""One live connection: transport + session + callback workers + handshake.

:class:`~mcpsync.Client` owns at most one :class:`Connection` at a time and
replaces it only after a fork.  Everything here that runs user code does so
on a :class:`~mcpsync._dispatch.Dispatcher` worker, never on the transport's
reader thread.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Callable

from . import types
from ._dispatch import Dispatcher
from ._options import ClientOptions, normalize_roots
from .exceptions import (
    ClientClosed,
    ConnectionClosed,
    McpError,
    ProtocolError,
    ServerError,
    ServerStartError,
    UnsupportedProtocolVersion,
)
from .session import PendingRequest, Session
from .transports.base import Transport

__all__ = ["Connection", "Listeners"]

log = logging.getLogger("mcpsync.client")
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


class Listeners:
    """Notification callbacks by method, shared by successive connections."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_method: dict[str, list[Callable[[dict[str, Any]], Any]]] = {}

    def add(self, method: str, callback: Callable[[dict[str, Any]], Any]) -> None:
        with self._lock:
            self._by_method.setdefault(method, []).append(callback)

    def remove(self, method: str, callback: Callable[[dict[str, Any]], Any]) -> None:
        with self._lock:
            callbacks = self._by_method.get(method, [])
            if callback in callbacks:
                callbacks.remove(callback)

    def get(self, method: str) -> list[Callable[[dict[str, Any]], Any]]:
        with self._lock:
            return list(self._by_method.get(method, ())) + list(self._by_method.get("*", ()))


class Connection:
    """A transport, its session, its callback workers and the handshake result."""

    def __init__(self, transport: Transport, options: ClientOptions, listeners: Listeners) -> None:
        self.transport = transport
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
        self._cancelled_requests: set[int | str] = set()
        self._cancel_lock = threading.Lock()
        self.initialize_result: types.InitializeResult | None = None
        self.protocol_version: str | None = None

    # -- lifecycle -----------------------------------------------------------

    def open(self, timeout: float | None) -> None:
        """Start the transport and run the initialize handshake.

        :raises ServerStartError: if the server cannot be started or dies first.
        :raises UnsupportedProtocolVersion: if the server picks a version we do not speak.
        """
        self.transport.start(self.session.feed, self._on_transport_closed)
        offered = self.options.offered_versions()
        name, version = self.options.client_info
        params = {
            "protocolVersion": offered[0],
            "capabilities": self.options.client_capabilities(),
            "clientInfo": {"name": name, "version": version},
        }
        try:
            pending = self.session.send_request("initialize", params)
            raw = self.session.wait(pending, timeout=timeout)
            result = types.from_wire(types.InitializeResult, raw)
            if result.protocol_version not in offered:
                raise UnsupportedProtocolVersion(
                    f"server chose protocol version {result.protocol_version!r}; "
                    f"this client speaks {', '.join(offered)}",
                    requested=offered[0],
                    supported=[result.protocol_version],
                )
            self.session.notify("notifications/initialized")
        except ConnectionClosed as exc:
            self.close()
            if isinstance(exc, ClientClosed):
                raise
            raise ServerStartError(
                f"server closed the connection during initialization: {exc.message}",
                exit_code=exc.exit_code,
                stderr_tail=exc.stderr_tail,
            ) from exc
        except BaseException:
            self.close()
            raise
        self.initialize_result = result
        self.protocol_version = result.protocol_version
        log.info(
            "connected to %s %s (protocol %s) over %s",
            result.server_info.name,
            result.server_info.version,
            result.protocol_version,
            self.transport.describe(),
        )

    def close(self) -> None:
        """Fail pending calls, close the transport, stop the workers; bounded."""
        self.session.fail_all(ClientClosed("client closed"))
        try:
            self.transport.close()
        finally:
            self.notifications.stop()
            self.handlers.stop()

    def abandon(self) -> None:
        """Forget this connection in a forked child without touching the parent's resources."""
        self.session.fail_all(ClientClosed("connection belongs to the parent process"))

    def _on_transport_closed(self, exc: BaseException) -> None:
        if not isinstance(exc, ClientClosed):
            log.info("connection lost: %s", exc)
        self.session.fail_all(exc)

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
            request_id = params.get("requestId")
            if isinstance(request_id, (int, str)) and not isinstance(request_id, bool):
                with self._cancel_lock:
                    self._cancelled_requests.add(request_id)
        for callback in self.listeners.get(method):
            self.notifications.submit(callback, params)

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

    def _on_request(self, request_id: int | str, method: str, params: dict[str, Any]) -> None:
        if not self.handlers.submit(self._handle_request, request_id, method, params):
            self.session.respond_error(request_id, -32603, "client is shutting down")

    def _handle_request(self, request_id: int | str, method: str, params: dict[str, Any]) -> None:
        try:
            result = self._run_handler(method, params)
        except ServerError as exc:
            self._answer_error(request_id, exc.code, exc.message, exc.data)
        except ProtocolError as exc:
            self._answer_error(request_id, -32602, f"invalid params: {exc}")
        except McpError as exc:
            self._answer_error(request_id, -32603, str(exc))
        except Exception as exc:
            # User handler failures are reported locally; the server only learns
            # that the handler failed, not its (possibly sensitive) message.
            self._report(exc)
            self._answer_error(request_id, -32603, f"client handler failed ({type(exc).__name__})")
        else:
            with self._cancel_lock:
                cancelled = request_id in self._cancelled_requests
                self._cancelled_requests.discard(request_id)
            if not cancelled:
                self.session.respond(request_id, result)

    def _answer_error(self, request_id: int | str, code: int, message: str, data: Any = None) -> None:
        with self._cancel_lock:
            cancelled = request_id in self._cancelled_requests
            self._cancelled_requests.discard(request_id)
        if not cancelled:
            self.session.respond_error(request_id, code, message, data)

    def _report(self, exc: BaseException) -> None:
        handler = self.options.exception_handler
        if handler is not None:
            try:
                handler(exc)
                return
            except Exception:
                log.exception("exception_handler raised")
        log.error("a client handler raised", exc_info=exc)

    def _run_handler(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        opts = self.options
        if method == "roots/list" and opts.roots is not None:
            return types.to_wire(types.ListRootsResult(roots=normalize_roots(opts.roots)))
        if method == "sampling/createMessage" and opts.sampling_handler is not None:
            request = types.from_wire(types.CreateMessageRequestParams, params)
            reply = opts.sampling_handler(request)
            return _as_wire(reply, types.CreateMessageResult, "sampling_handler")
        if method == "elicitation/create" and opts.elicitation_handler is not None:
            elicit: Any
            if params.get("mode") == "url":
                elicit = types.from_wire(types.ElicitRequestURLParams, params)
            else:
                elicit = types.from_wire(types.ElicitRequestFormParams, params)
            reply = opts.elicitation_handler(elicit)
            return _as_wire(reply, types.ElicitResult, "elicitation_handler")
        raise ServerError(-32601, f"method not found: {method}")


def _as_wire(reply: Any, cls: type[Any], who: str) -> dict[str, Any]:
    if isinstance(reply, cls):
        return types.to_wire(reply)
    if isinstance(reply, dict):
        # Accept a wire-format dict, but validate it through the type.
        return types.to_wire(types.from_wire(cls, reply))
    raise TypeError(f"{who} must return {cls.__name__}, not {type(reply).__name__}")
