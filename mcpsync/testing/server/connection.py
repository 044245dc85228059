"""A small synchronous MCP *server* engine, for :mod:`mcpsync.testing` and the demo.

It speaks the handshake era (2024-11-05 … 2025-11-25, preferring the newest)
and, unless told not to, the stateless era 2026-07-28 (:mod:`mcpsync.testing.server.modern`)
over one connection: a memory transport end or this process's stdin/stdout.
It works on plain wire-format dicts and knows nothing of tools' Python
functions: the features live in a :class:`ServerApp` (the
:class:`~mcpsync.testing.FakeServer`), the engine does JSON-RPC, the
lifecycle, pagination, cancellation, logging levels, subscriptions and
server→client requests.

Threads: messages are fed from one reader thread (the memory transport's
delivery thread, or the caller of :func:`serve_stdio`).  Cheap methods are
answered on it; every ``tools/call`` runs on its own named daemon thread, so a
tool may block, wait for :attr:`ToolContext.cancelled` or make a server→client
request (whose reply arrives on the reader thread) while others proceed.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from mcpsync.testing.server import tools as _server_tools
from mcpsync.testing.server.context import (
    LATEST_PROTOCOL_VERSION,
    LOGGING_LEVELS,
    PROTOCOL_VERSIONS,
    ClientRequestError,
    RpcError,
    ServerApp,
    ToolContext,
)
from mcpsync.testing.server.methods import HANDLERS
from mcpsync.testing.server.modern import (
    Listens,
    ModernCall,
    handle,
    modern_info,
)
from mcpsync.exceptions import ConnectionClosed, McpError, RequestTimeout

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "LOGGING_LEVELS",
    "PROTOCOL_VERSIONS",
    "ClientRequestError",
    "RpcError",
    "ServerApp",
    "ServerConnection",
    "ToolContext",
]

_log = logging.getLogger(__name__)

#: How long losing the connection waits, in total, for cancelled tool threads to finish.
TOOL_JOIN_TIMEOUT = 2.0
#: How long stdin EOF lets running tools finish and answer before they are cancelled.
DRAIN_TIMEOUT = 5.0

_PARSE_ERROR, _INVALID_REQUEST, _METHOD_NOT_FOUND, _INVALID_PARAMS, _INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)

class _Waiter:
    """One pending server→client request; settled only by whoever pops it."""

    __slots__ = ("error", "event", "response")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.response: dict[str, Any] | None = None
        self.error: BaseException | None = None


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


class ServerConnection:
    """The server side of one connection: JSON-RPC, lifecycle and feature methods.

    :param app: the features (normally a :class:`~mcpsync.testing.FakeServer`).
    :param send: writes one message to the client; thread-safe; raises
        :class:`~mcpsync.exceptions.ConnectionClosed` once the client is gone.
    :param page_size: items per page of list results; ``None`` = one page.
    :param disconnect: closes the transport from the server's side, where that is possible.
    :param era: ``"legacy"`` (handshake only), ``"modern"`` (2026-07-28 only) or
        ``"dual"`` (each request's ``_meta`` decides).
    """

    def __init__(
        self,
        app: ServerApp,
        send: Callable[[Mapping[str, Any]], None],
        *,
        page_size: int | None = None,
        disconnect: Callable[[], None] | None = None,
        era: str = "dual",
    ) -> None:
        #: The features this connection serves.
        self.app: ServerApp = app
        self._send = send
        self._disconnect = disconnect
        #: Items per page of list results (``None``: no pagination).
        self.page_size: int | None = page_size
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._waiters: dict[int, _Waiter] = {}
        self._inflight: dict[Any, ToolContext] = {}
        self._cancelled: set[Any] = (
            set()
        )  # in-flight ids the client sent notifications/cancelled for
        self._threads: set[threading.Thread] = set()
        self._closed = False
        #: The level set by ``logging/setLevel`` (``None``: send everything).
        self.log_level: str | None = None
        #: The negotiated protocol revision (``None`` before ``initialize``).
        self.protocol_version: str | None = None
        #: What the client declared in ``initialize``.
        self.client_capabilities: dict[str, Any] = {}
        #: The client's ``clientInfo``.
        self.client_info: dict[str, Any] = {}
        #: Set once ``notifications/initialized`` arrived.
        self.initialized = threading.Event()
        #: Resource URIs the client subscribed to.
        self.subscriptions: set[str] = set()
        self.era_mode = era
        #: ``"modern"`` once a 2026-07-28 request arrived (it decides where notifications go).
        self.era: str | None = None
        #: Open ``subscriptions/listen`` streams.
        self.listens = Listens()

    # -- outgoing ----------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether the connection has been lost."""
        return self._closed

    def disconnect(self) -> None:
        """Drop the connection from the server's side, as a crashing server would.

        The client sees :class:`~mcpsync.exceptions.ConnectionClosed`.  Bounded;
        a no-op where the transport cannot be closed from here (stdio).
        """
        if self._disconnect is not None:
            self._disconnect()

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification; silently dropped once the client is gone."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        self._write(message)

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if *level* passes the client's ``logging/setLevel``.

        Nothing goes to a 2026-07-28 client: its log messages belong to a request.
        """
        if self.era != "modern":
            self.send_log(level, data, logger, self.log_level)

    def send_log(self, level: str, data: Any, logger: str | None, threshold: str | None) -> None:
        """Send ``notifications/message`` if *level* is at least *threshold* (``None``: any)."""
        if level not in LOGGING_LEVELS:
            raise ValueError(f"unknown logging level {level!r}")
        if threshold is not None and LOGGING_LEVELS.index(level) < LOGGING_LEVELS.index(threshold):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.notify("notifications/message", params)

    def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = 60.0
    ) -> dict[str, Any]:
        """Send a server→client request and block until the client answers.

        Must not be called on the reader thread (the reply arrives there);
        tools run on their own threads, so they may call it.

        :raises ClientRequestError: when the client answers with an error.
        :raises ~mcpsync.exceptions.RequestTimeout: after *timeout* seconds
            (``notifications/cancelled`` is sent).
        :raises ~mcpsync.exceptions.ConnectionClosed: when the client disconnects.
        """
        waiter = _Waiter()
        with self._lock:
            if self._closed:
                raise ConnectionClosed("the client disconnected")
            request_id = next(self._ids)
            self._waiters[request_id] = waiter
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        try:
            self._send(message)
        except BaseException:
            with self._lock:
                self._waiters.pop(request_id, None)
            raise
        started = time.monotonic()
        if not waiter.event.wait(timeout):
            with self._lock:
                mine = self._waiters.pop(request_id, None) is waiter
            if mine:
                self.notify(
                    "notifications/cancelled", {"requestId": request_id, "reason": "timeout"}
                )
                raise RequestTimeout(
                    f"client did not answer {method} in time",
                    method=method,
                    elapsed=time.monotonic() - started,
                )
            waiter.event.wait()  # popped by the reader or by connection_lost: settled imminently
        if waiter.error is not None:
            raise waiter.error
        response = waiter.response or {}
        if "error" in response:
            error = response["error"] if isinstance(response["error"], dict) else {}
            code = error.get("code")
            raise ClientRequestError(
                code if isinstance(code, int) else _INTERNAL_ERROR,
                str(error.get("message", "")),
                error.get("data"),
            )
        result = response.get("result")
        return result if isinstance(result, dict) else {}

    def _write(self, message: Mapping[str, Any]) -> None:
        try:
            self._send(message)
        except McpError:
            _log.debug("client gone; dropping %s", message.get("method", "response"))

    def _respond(self, request_id: Any, result: Mapping[str, Any]) -> None:
        try:
            self._send({"jsonrpc": "2.0", "id": request_id, "result": dict(result)})
        except (ValueError, TypeError) as exc:  # the app produced something JSON cannot carry
            self._error(request_id, RpcError(_INTERNAL_ERROR, f"result is not valid JSON: {exc}"))
        except McpError:
            _log.debug("client gone; dropping response to %r", request_id)

    def _error(self, request_id: Any, error: RpcError) -> None:
        self._write({"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()})

    # -- incoming ----------------------------------------------------------

    def feed(self, message: Any) -> None:
        """Handle one parsed message from the client (called on the reader thread)."""
        if not isinstance(message, dict):
            self._error(
                None,
                RpcError(
                    _INVALID_REQUEST, "expected a JSON-RPC object (batches are not supported)"
                ),
            )
            return
        method = message.get("method")
        if method is None and "id" in message and ("result" in message or "error" in message):
            self._on_response(message)
            return
        if not isinstance(method, str) or message.get("jsonrpc") != "2.0":
            if _valid_id(message.get("id")):
                self._error(message["id"], RpcError(_INVALID_REQUEST, "not a JSON-RPC 2.0 request"))
            return
        params = message.get("params", {})
        if "id" not in message:
            if isinstance(params, dict):
                self._on_notification(method, params)
            return
        request_id = message["id"]
        if not _valid_id(request_id):
            self._error(
                None, RpcError(_INVALID_REQUEST, "request id must be a string or an integer")
            )
            return
        if not isinstance(params, dict):
            self._error(request_id, RpcError(_INVALID_PARAMS, "params must be an object"))
            return
        self._on_request(request_id, method, params)

    def connection_lost(self, exc: BaseException | None = None, *, drain: bool = False) -> None:
        """The client is gone: fail pending requests, stop running tools, join them (bounded).

        :param drain: the client only stopped *sending* (stdin EOF) and may still
            read: give running tools up to :data:`DRAIN_TIMEOUT` to finish and
            answer before they are cancelled.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            waiters = list(self._waiters.values())
            self._waiters.clear()
        for waiter in waiters:  # no reply can arrive any more
            waiter.error = ConnectionClosed("the client disconnected")
            waiter.event.set()
        if drain:
            _server_tools.join_tools(self, DRAIN_TIMEOUT, warn=False)
        with self._lock:
            contexts = list(self._inflight.values())
        for ctx in contexts:
            ctx.cancelled.set()
        _server_tools.join_tools(self, TOOL_JOIN_TIMEOUT, warn=True)
        try:
            self.app.connection_closed(self)
        except Exception:
            _log.exception("connection_closed hook failed")

    def _on_response(self, message: dict[str, Any]) -> None:
        if not _valid_id(message["id"]):  # e.g. a list: not even hashable
            _log.debug("dropping a response with an invalid id")
            return
        with self._lock:
            waiter = self._waiters.pop(message["id"], None)
        if waiter is None:
            _log.debug("dropping a response for unknown id %r", message["id"])
            return
        waiter.response = message
        waiter.event.set()

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/initialized":
            self.initialized.set()
        elif method == "notifications/cancelled" and _valid_id(params.get("requestId")):
            with self._lock:
                ctx = self._inflight.get(params["requestId"])
                if ctx is not None:
                    self._cancelled.add(ctx.request_id)
            if ctx is not None:
                ctx.cancelled.set()
            else:
                self.listens.cancelled(params["requestId"])
        # Anything else (roots/list_changed, progress, unknown) needs no action here.

    def _on_request(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        try:
            call = modern_info(params) if self.era_mode != "legacy" else None
        except RpcError as exc:  # e.g. a requestState we did not write
            self._error(request_id, exc)
            return
        if call is not None:
            handle(self, request_id, method, params, call)
            return
        handler = HANDLERS.get(method)
        if handler is None or (self.era_mode == "modern" and method == "initialize"):
            self._error(request_id, RpcError(_METHOD_NOT_FOUND, f"Method not found: {method}"))
            return
        if self.protocol_version is None and method not in ("initialize", "ping"):
            self._error(request_id, RpcError(_INVALID_REQUEST, "the session is not initialized"))
            return
        if method == "tools/call":
            self._start_tool(request_id, params)
            return
        self._answer_inline(request_id, method, params)

    def _answer_inline(
        self,
        request_id: Any,
        method: str,
        params: dict[str, Any],
        finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        handler = HANDLERS.get(method)
        if handler is None:
            self._error(request_id, RpcError(_METHOD_NOT_FOUND, f"Method not found: {method}"))
            return
        try:
            result = handler(self, params)
            if finish is not None:
                result = finish(result)
        except RpcError as exc:
            self._error(request_id, exc)
        except Exception as exc:
            _log.debug("%s failed", method, exc_info=True)
            self._error(request_id, RpcError(_INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
        else:
            self._respond(request_id, result)

    # -- tools/call on its own thread (in _server_tools) ------------------

    def _start_tool(self, request_id: Any, params: dict[str, Any], call: ModernCall | None = None) -> None:
        _server_tools.start_tool(self, request_id, params, call)

    def publish(self, method: str, params: dict[str, Any]) -> None:
        """Send a change notification: on listen streams (2026-07-28) or plainly, if subscribed."""
        if self.era == "modern":
            self.listens.publish(self, method, params)
        elif method != "notifications/resources/updated" or params.get("uri") in self.subscriptions:
            self.notify(method, params or None)

    def set_subscribed(self, uri: str, subscribed: bool) -> None:
        """Record a ``resources/subscribe`` or ``resources/unsubscribe``."""
        with self._lock:
            if subscribed:
                self.subscriptions.add(uri)
            else:
                self.subscriptions.discard(uri)
