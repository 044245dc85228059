"""The server side of one connection: JSON-RPC in and out, server→client requests, the threads
of running calls, change notifications and the end of the connection.

It works on plain wire dicts and knows no MCP method: each request goes to the *dispatch*
function it was given (:func:`mcpsync.testing.server.methods.dispatch`).  Messages are fed
from one reader thread (the memory transport's delivery thread, or the stdio loop); cheap
methods are answered on it, and every ``tools/call`` runs on its own named daemon thread
(:meth:`ServerConnection.start_call`), so a tool may block, wait for
:attr:`~mcpsync.testing.ToolContext.cancelled` or make a server→client request (whose reply
arrives on the reader thread) while others proceed.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from mcpsync.exceptions import ConnectionClosed, McpError, RequestTimeout
from mcpsync.testing.server.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from mcpsync.testing.server.errors import ClientRequestError, RpcError, internal_error
from mcpsync.types.modern import SUBSCRIPTION_ID_KEY
from mcpsync.types.protocol import LOGGING_LEVELS


_log = logging.getLogger(__name__)

#: How long losing the connection waits, in total, for cancelled tool threads to finish.
TOOL_JOIN_TIMEOUT = 2.0
#: How long stdin EOF lets running tools finish and answer before they are cancelled.
DRAIN_TIMEOUT = 5.0
#: The ``subscriptions/listen`` flag that opts in to each list-changed notification.
_LIST_CHANGED_FLAGS = {f"notifications/{k}/list_changed": f"{k}ListChanged" for k in ("tools", "prompts", "resources")}

#: Writes one message to the client.
Send = Callable[[Mapping[str, Any]], None]
#: ``(connection, request_id, method, params)``: answers one request.
Dispatch = Callable[["ServerConnection", Any, str, "dict[str, Any]"], None]
_numbers = itertools.count(1)  # of the threads, across the process


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _message(method: str, params: Mapping[str, Any] | None, **fields: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", **fields, "method": method, **({"params": dict(params)} if params is not None else {})}


class ThreadSet:
    """Named daemon threads (``mcpsync-fakeserver-<kind>-<n>``), each forgotten when it ends."""

    def __init__(self, kind: str) -> None:
        self._kind = kind
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()

    def start(self, target: Callable[[], None]) -> None:
        """Run *target* on a new thread, registered before it starts."""

        def run() -> None:
            try:
                target()
            finally:
                with self._lock:
                    self._threads.discard(thread)

        thread = threading.Thread(target=run, name=f"mcpsync-fakeserver-{self._kind}-{next(_numbers)}", daemon=True)
        with self._lock:
            self._threads.add(thread)
        thread.start()

    def join(self, timeout: float, *, warn: bool = False) -> None:
        """Wait, in total at most *timeout* seconds, for the running threads."""
        with self._lock:
            threads = [t for t in self._threads if t is not threading.current_thread()]
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            if warn and thread.is_alive():
                _log.warning("tool thread %s still running after the client disconnected", thread.name)


class ServerConnection:
    """The server side of one connection.

    :param send: writes one message to the client; thread-safe; raises
        :class:`~mcpsync.exceptions.ConnectionClosed` once the client is gone.
    :param dispatch: answers each request.
    :param disconnect: closes the transport from the server's side, where that is possible.
    :param on_lost: called once the connection is lost and its tools have stopped.
    """

    def __init__(self, send: Send, dispatch: Dispatch, disconnect: Callable[[], None] | None = None,
                 on_lost: Callable[[ServerConnection], None] | None = None) -> None:
        self._send, self._dispatch, self._disconnect, self._on_lost = send, dispatch, disconnect, on_lost
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._waiters: dict[Any, queue.SimpleQueue[Any]] = {}
        self._running: dict[Any, threading.Event] = {}  # tools/call id -> its ``cancelled``
        self._listens: dict[Any, dict[str, Any]] = {}  # subscriptions/listen id -> what it honours
        self.threads = ThreadSet("tool")
        #: Whether the connection has been lost.
        self.closed = False
        #: The level set by ``logging/setLevel`` (``None``: send everything).
        self.log_level: str | None = None
        #: The negotiated protocol revision (``None`` before ``initialize``).
        self.protocol_version: str | None = None
        #: What the client declared in ``initialize``, and its ``clientInfo``.
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        #: Resource URIs the client subscribed to (handshake era).
        self.subscriptions: set[str] = set()
        #: ``"modern"`` once a 2026-07-28 request arrived (it decides where notifications go).
        self.era: str | None = None

    # -- outgoing ----------------------------------------------------------

    def disconnect(self) -> None:
        """Drop the connection from the server's side, as a crashing server would.

        The client sees :class:`~mcpsync.exceptions.ConnectionClosed`.  Bounded;
        a no-op where the transport cannot be closed from here (stdio).
        """
        if self._disconnect is not None:
            self._disconnect()

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification; silently dropped once the client is gone."""
        try:
            self._send(_message(method, params))
        except McpError:
            _log.debug("client gone; dropping %s", method)

    def respond(self, request_id: Any, outcome: Mapping[str, Any] | RpcError) -> None:
        """Answer a request with a result or an error; dropped once the client is gone."""
        member = {"error": outcome.to_wire()} if isinstance(outcome, RpcError) else {"result": dict(outcome)}
        try:
            self._send({"jsonrpc": "2.0", "id": request_id, **member})
        except (ValueError, TypeError) as exc:  # the app produced something JSON cannot carry
            self.respond(request_id, RpcError(INTERNAL_ERROR, f"result is not valid JSON: {exc}"))
        except McpError:
            _log.debug("client gone; dropping the answer to %r", request_id)

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
        if threshold is None or LOGGING_LEVELS.index(level) >= LOGGING_LEVELS.index(threshold):
            extra = {"logger": logger} if logger is not None else {}
            self.notify("notifications/message", {"level": level, "data": data, **extra})

    def request(self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = 60.0
                ) -> dict[str, Any]:
        """Send a server→client request and block until the client answers.

        Must not be called on the reader thread (the reply arrives there);
        tools run on their own threads, so they may call it.

        :raises ClientRequestError: when the client answers with an error.
        :raises ~mcpsync.exceptions.RequestTimeout: after *timeout* seconds
            (``notifications/cancelled`` is sent).
        :raises ~mcpsync.exceptions.ConnectionClosed: when the client disconnects.
        """
        box: queue.SimpleQueue[Any] = queue.SimpleQueue()  # settled only by whoever pops it
        with self._lock:
            if self.closed:
                raise ConnectionClosed("the client disconnected")
            request_id = next(self._ids)
            self._waiters[request_id] = box
        started = time.monotonic()
        try:
            self._send(_message(method, params, id=request_id))
            reply = box.get(timeout=timeout)
        except queue.Empty:
            with self._lock:
                mine = self._waiters.pop(request_id, None) is box
            if mine:
                self.notify("notifications/cancelled", {"requestId": request_id, "reason": "timeout"})
                raise RequestTimeout(f"client did not answer {method} in time", method=method,
                                     elapsed=time.monotonic() - started) from None
            reply = box.get()  # popped by the reader or by connection_lost: settled imminently
        except BaseException:
            with self._lock:
                self._waiters.pop(request_id, None)
            raise
        if isinstance(reply, BaseException):
            raise reply
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {}
            code = error.get("code")
            raise ClientRequestError(code if isinstance(code, int) else INTERNAL_ERROR, str(error.get("message", "")),
                                     error.get("data"))
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    # -- incoming ----------------------------------------------------------

    def feed(self, message: Any) -> None:
        """Handle one parsed message from the client (called on the reader thread)."""
        if not isinstance(message, dict):
            self.respond(None, RpcError(INVALID_REQUEST, "expected a JSON-RPC object (no batches)"))
            return
        method, request_id, params = message.get("method"), message.get("id"), message.get("params", {})
        if method is None and "id" in message and ("result" in message or "error" in message):
            with self._lock:  # a list id is not even hashable
                box = self._waiters.pop(request_id, None) if _valid_id(request_id) else None
            if box is None:
                _log.debug("dropping a response for unknown id %r", request_id)
            else:
                box.put(message)
        elif not isinstance(method, str) or message.get("jsonrpc") != "2.0":
            if _valid_id(request_id):
                self.respond(request_id, RpcError(INVALID_REQUEST, "not a JSON-RPC 2.0 request"))
        elif "id" not in message:
            cancelled = params.get("requestId") if isinstance(params, dict) else None
            if method == "notifications/cancelled" and _valid_id(cancelled):
                self._cancel(cancelled)
            # Anything else (initialized, roots/list_changed, progress, unknown) needs no action here.
        elif not _valid_id(request_id):
            self.respond(None, RpcError(INVALID_REQUEST, "request id must be a string or an integer"))
        elif not isinstance(params, dict):
            self.respond(request_id, RpcError(INVALID_PARAMS, "params must be an object"))
        else:
            self._dispatch(self, request_id, method, params)

    def _cancel(self, request_id: Any) -> None:
        with self._lock:
            cancelled = self._running.pop(request_id, None)  # popped: the call gets no response
            if cancelled is None:
                self._listens.pop(request_id, None)
        if cancelled is not None:
            cancelled.set()

    def answer(self, request_id: Any, work: Callable[[], Mapping[str, Any] | None],
               cancelled: threading.Event | None = None) -> None:
        """Answer *request_id* with what *work* returns (``None``: answered elsewhere) or raises.

        :param cancelled: the call's event while it runs (:meth:`start_call`); a call the
            client cancelled gets no response, as the spec says.
        """
        try:
            outcome: Mapping[str, Any] | RpcError | None = work()
        except RpcError as exc:
            outcome = exc
        except Exception as exc:
            _log.debug("request %r failed", request_id, exc_info=True)
            outcome = internal_error(exc)
        if cancelled is not None:
            with self._lock:
                if self._running.pop(request_id, None) is not cancelled:
                    return
        if outcome is not None:
            self.respond(request_id, outcome)

    def start_call(self, request_id: Any, cancelled: threading.Event, work: Callable[[], Mapping[str, Any]]) -> None:
        """Answer *request_id* on a thread of its own (nothing once the connection is lost).

        *cancelled* is set when the client cancels the call or disconnects.
        """
        with self._lock:
            if self.closed:
                return
            self._running[request_id] = cancelled  # before the thread starts: a cancel finds it
            self.threads.start(lambda: self.answer(request_id, work, cancelled))

    def connection_lost(self, exc: BaseException | None = None, *, drain: bool = False) -> None:
        """The client is gone: fail pending requests, stop running tools, join them (bounded).

        :param drain: the client only stopped *sending* (stdin EOF) and may still
            read: give running tools up to :data:`DRAIN_TIMEOUT` to finish and
            answer before they are cancelled.
        """
        with self._lock:
            if self.closed:
                return
            self.closed = True
            waiters, self._waiters = list(self._waiters.values()), {}
        for box in waiters:  # no reply can arrive any more
            box.put(ConnectionClosed("the client disconnected"))
        if drain:
            self.threads.join(DRAIN_TIMEOUT)
        with self._lock:
            running = list(self._running.values())
        for cancelled in running:
            cancelled.set()
        self.threads.join(TOOL_JOIN_TIMEOUT, warn=True)
        if self._on_lost is not None:
            self._on_lost(self)

    # -- change notifications ------------------------------------------------

    def listen(self, request_id: Any, params: dict[str, Any]) -> None:
        """Open a ``subscriptions/listen`` stream (2026-07-28); it stays open until cancelled or ended."""
        if not isinstance(wanted := params.get("notifications"), dict):
            raise RpcError(INVALID_PARAMS, "subscriptions/listen needs notifications")
        # Honour every kind asked for; echo only what is switched on.
        honoured: dict[str, Any] = {flag: True for flag in _LIST_CHANGED_FLAGS.values() if wanted.get(flag)}
        if isinstance(uris := wanted.get("resourceSubscriptions"), list) and uris:
            honoured["resourceSubscriptions"] = [str(uri) for uri in uris]
        with self._lock:
            self._listens[request_id] = honoured
        self.notify("notifications/subscriptions/acknowledged",
                    {"notifications": honoured, "_meta": {SUBSCRIPTION_ID_KEY: request_id}})

    def publish(self, method: str, params: dict[str, Any]) -> None:
        """Send a change notification: on the listen streams that opted in to it (2026-07-28), or
        plainly (``resources/updated`` only if the client subscribed to that resource)."""
        if self.era != "modern":
            if method != "notifications/resources/updated" or params.get("uri") in self.subscriptions:
                self.notify(method, params or None)
            return
        flag = _LIST_CHANGED_FLAGS.get(method, "")
        with self._lock:
            streams = list(self._listens.items())
        for stream_id, honoured in streams:
            if honoured.get(flag) if flag else params.get("uri") in honoured.get("resourceSubscriptions", ()):
                self.notify(method, {**params, "_meta": {SUBSCRIPTION_ID_KEY: stream_id}})

    def end_listens(self) -> None:
        """End every listen stream gracefully: its response is the final frame."""
        with self._lock:
            streams, self._listens = list(self._listens), {}
        for stream_id in streams:
            self.respond(stream_id, {"resultType": "complete", "_meta": {SUBSCRIPTION_ID_KEY: stream_id}})
