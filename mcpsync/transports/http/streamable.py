"""The Streamable HTTP transport (MCP 2025-03-26 … 2026-07-28).

Every message is a POST to one URL, and :meth:`StreamableHTTPTransport.send` is the whole
exchange: it returns once the reply to the request it carries has been delivered (a JSON
body, or an SSE stream read up to the reply, every message on it delivered as its event
arrives), so a failure of that one exchange is raised for that one request
(docs/design.rst, *How a transport fails one request*).  Every wait is bounded by the
call's deadline and interrupted at once by :meth:`close` or by cancelling the request,
even before the headers (:mod:`.interrupt`).  A 404 on a session raises
:class:`~mcpsync.exceptions.SessionExpired`: the client re-initializes (MCP is above this
seam).  Handshake era: session headers, a listening GET stream after
``notifications/initialized``, resumption of a broken reply stream, a DELETE on close.
2026-07-28: routing headers, no session, and cancelling closes the request's stream.
docs/transports.rst tells the rest.
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import (ClientClosed, ConnectionClosed, HTTPStatusError, McpError, MessageTooLarge,
                                ProtocolError, RequestCancelled, RequestTimeout, SessionExpired)
from mcpsync.rpc.deadline import Deadline
from mcpsync.transports.base import encode_message
from mcpsync.transports.http import wire
from mcpsync.transports.http import headers as rules
from mcpsync.transports.http import interrupt
from mcpsync.transports.http.base import HttpTransport
from mcpsync.transports.http.sse_parser import SSEParser
from mcpsync.transports.http.streams import _Dialect, pump

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["FallbackToLegacy", "StreamableHTTPTransport"]

log = logging.getLogger(__name__)

_ACCEPT = "application/json, text/event-stream"
_NO_STREAM = frozenset({400, 404, 405})
#: Bound on a notification POSTed off the caller's thread (a cancellation).
_NOTIFY_TIMEOUT = 5.0
#: Floor under a server's ``retry`` (RELIABILITY C4): ``retry: 0`` and one event per stream
#: would otherwise reconnect in a tight loop.
_MIN_RETRY = 0.1
#: How often a caller waiting on a worker's exchange looks at close and cancel.
_POLL = 0.1


class FallbackToLegacy(McpError):
    """Internal: the server refused our POSTs as a 2024-11-05 HTTP+SSE server would."""

    def __init__(self, error: HTTPStatusError) -> None:
        super().__init__(str(error))
        self.error = error


class StreamableHTTPTransport(HttpTransport):
    """MCP over Streamable HTTP, with ``requests``.

    Takes the parameters of :class:`~.base.HttpTransport` (the URL, ``auth``,
    ``headers``, ``session``, timeouts, limits) and:

    :param reconnect_attempts: reconnects in a row of one stream that bring no progress
        (a new event id or message) before giving up.
    :param retry_delay: seconds before the first reconnect when the server sent no
        ``retry``; later ones back off exponentially with jitter.
    :param max_retry_delay: cap on any reconnect delay (a server's ``retry`` too).
    :param delete_timeout: bound on the ``DELETE`` sent by :meth:`close`.
    :param listen: open the GET listening stream after the handshake.
    """

    def __init__(self, url: str, *, reconnect_attempts: int = 3, retry_delay: float = 1.0,
                 max_retry_delay: float = 30.0, delete_timeout: float = 2.0, listen: bool = True,
                 _fallback: bool = False, **options: Any) -> None:
        super().__init__(url, **options)
        self._attempts, self._retry_delay, self._max_retry_delay = reconnect_attempts, retry_delay, max_retry_delay
        self._delete_timeout, self._listen, self._fallback = delete_timeout, listen, _fallback
        self.session_id: str | None = None
        #: The negotiated handshake-era version, sent as ``MCP-Protocol-Version``.
        self.protocol_version: str | None = None
        self._initialize_id: Any = None
        #: Whether a 2026-07-28 request went out (and no ``initialize``): cancelling closes streams.
        self._modern = False
        self._tools = rules.ToolHeaders()
        self._listener: threading.Thread | None = None
        self._listener_answered: threading.Event | None = None
        #: Set when a 2026-07-28 probe POST was refused outright (404/405, no JSON-RPC body).
        self._post_refused: HTTPStatusError | None = None

    def describe(self) -> str:
        return f"Streamable HTTP {wire.redact_url(self.url)}"

    # -- sending ---------------------------------------------------------------------------

    def send(self, message: Mapping[str, Any], deadline: Deadline | None = None) -> None:
        """POST one message; for a request, up to its reply (see the module docstring).

        :raises FallbackToLegacy: (``initialize`` only) when the server refused our POSTs
            as a 2024-11-05 server does; :class:`AutoHTTPTransport` catches it.
        :raises SessionExpired: a 404 for a request that carried a session id.
        :raises HTTPStatusError: for any other non-success status.
        :raises RequestTimeout: when *deadline* passed first.
        :raises ConnectionClosed: when the server cannot be reached or the reply was lost.
        """
        body = encode_message(message)
        self._check_open()
        method = message.get("method")
        if method == rules.CANCELLED:
            # Its exchange, if still in flight (2026-07-28: that is the cancellation).
            self._abort(rules.cancelled_request_id(message))
            if not self._modern:  # off the caller's thread: cancel() never waits for the server
                self._spawn(self._post_quietly, message, body, name="notify")
            return
        if method == rules.INITIALIZE and "id" in message:
            if self._fallback and self._post_refused is not None:
                raise FallbackToLegacy(self._post_refused)
            self._initialize_id, self._modern = message["id"], False
        elif not self._modern and self._initialize_id is None and rules.is_modern(message):
            self._modern = True
        request_id = message.get("id") if method is not None else None
        key = request_id if isinstance(request_id, (int, str)) else object()
        try:
            if self._may_abort_headers:
                self._exchange(key, message, body, deadline)
            else:
                self._exchange_on_worker(key, message, body, deadline)
        except RequestTimeout:
            if request_id is not None and method != rules.INITIALIZE and not self._modern:
                # The server has the request: tell it we gave up (2026-07-28: the closed stream says it).
                cancel = {"jsonrpc": "2.0", "method": rules.CANCELLED,
                          "params": {"requestId": request_id, "reason": "timeout"}}
                with contextlib.suppress(ClientClosed):  # closed meanwhile: no one to tell
                    self._spawn(self._post_quietly, cancel, encode_message(cancel), name="notify")
            raise
        if method == rules.INITIALIZED and self._listen:
            self._ensure_listener(deadline)

    def _exchange_on_worker(self, key: Any, message: Mapping[str, Any], body: bytes, deadline: Deadline | None) -> None:
        """A session of the user's: the exchange runs on a worker; close, cancel and the deadline release us."""
        done = threading.Event()
        outcome: list[BaseException] = []
        exchange: list[interrupt.Exchange] = []

        def run() -> None:
            try:
                self._exchange(key, message, body, deadline, exchange)
            except BaseException as exc:  # handed to the caller
                outcome.append(exc)
            finally:
                done.set()

        self._spawn(run, name="post")
        while not done.wait(_POLL if deadline is None else deadline.remaining(_POLL)):
            self._check_open()
            if exchange and exchange[0].aborted:
                raise RequestCancelled("request was cancelled")
            if deadline is not None:
                deadline.check(f"POST {message.get('method') or 'response'} got no reply",
                               str(message.get("method") or ""))
        if outcome:
            raise outcome[0]

    def _exchange(self, key: Any, message: Mapping[str, Any], body: bytes, deadline: Deadline | None,
                  published: list[interrupt.Exchange] | None = None) -> None:
        """POST *message* and handle the answer, in a registered (abortable) exchange."""
        method = message.get("method")
        what = f"POST {method or 'response'}"
        sent_session = self.session_id
        with self._registered(key) as exchange:
            if published is not None:
                published.append(exchange)
            try:
                response = self._request("POST", self.url, headers=self._post_headers(message), what=what,
                                         deadline=deadline, data=body)
                exchange.response = response
                try:
                    if response.status_code == 404 and sent_session is not None and method != rules.INITIALIZE:
                        if self.session_id == sent_session:
                            self.session_id = None  # gone: the re-initialize goes out without it
                        raise SessionExpired(404, f"session expired ({what} answered 404)")
                    self._handle(response, message, deadline)
                finally:
                    response.close()
            except McpError:
                raise
            except Exception as exc:  # a read that broke (requests, urllib3, OSError); seen in the exchange
                raise self._failure(exc, f"reading the reply to {what}", deadline) from wire.sanitized(exc)

    def _session_headers(self, extra: Mapping[str, str] = {}) -> dict[str, str]:  # noqa: B006 - read only
        """Our headers and *extra*, with the handshake era's session id and version."""
        headers = {**self._headers, **extra}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _post_headers(self, message: Mapping[str, Any]) -> dict[str, str]:
        headers = self._session_headers({"Accept": _ACCEPT, "Content-Type": "application/json"})
        headers.update(rules.routing_headers(message, self._tools))
        return headers

    def _handle(self, response: requests.Response, message: Mapping[str, Any], deadline: Deadline | None) -> None:
        """Deliver what *response* carries (the reply to *message*, and anything before it)."""
        method = message.get("method")
        request_id = message.get("id") if method is not None else None
        status = response.status_code
        if not 200 <= status < 300:
            raw = wire.read_error_body(response)
            rpc_body = rules.rpc_error_body(raw)
            reply = rules.modern_error(status, rpc_body, request_id) if rules.is_modern(message) else None
            if reply is not None:
                self._on_message(reply)
                return
            error = wire.status_error(response, f"{method or 'response'} was refused", raw=raw)
            if self._fallback and status in _NO_STREAM:
                if method == rules.INITIALIZE:
                    raise FallbackToLegacy(error) from None
                if rules.is_modern(message) and status != 400 and rpc_body is None:
                    self._post_refused = error  # POST itself is refused, as by a 2024-11-05 server
            raise error
        if method == rules.INITIALIZE:
            session_id = response.headers.get("Mcp-Session-Id")
            if session_id is not None and not rules.valid_session_id(session_id):
                raise ProtocolError("server sent an invalid Mcp-Session-Id (not visible ASCII or too long)")
            self.session_id = session_id
        learn = method == "tools/list"
        if wire.is_event_stream(response):
            if request_id is not None:
                self._read_reply_stream(response, message, request_id, deadline, learn)
            return
        raw = wire.read_body(response, self._max, deadline)
        if not raw.strip():
            return  # 202 or an empty 200: accepted
        if not wire.is_json(response) and request_id is not None:
            raise ProtocolError(f"{method} got a {status} reply of type {response.headers.get('Content-Type')!r}")
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            raise ProtocolError(f"{method} got a reply that is not JSON: {exc}") from None
        for item in payload if isinstance(payload, list) else [payload]:
            self._deliver_reply(item, request_id, learn)

    def _deliver_reply(self, item: Any, request_id: Any, learn: bool) -> None:
        """Pass one message up; from the reply, learn tool annotations or the negotiated version."""
        if isinstance(item, dict) and "method" not in item and item.get("id") == request_id \
                and isinstance(item.get("result"), dict):
            if learn:
                item = {**item, "result": self._tools.learn(item["result"])}
            elif request_id == self._initialize_id:
                version = item["result"].get("protocolVersion")
                if isinstance(version, str):
                    self.protocol_version = version
        self._on_message(item)

    def _read_reply_stream(self, response: requests.Response, message: Mapping[str, Any], request_id: Any,
                           deadline: Deadline | None, learn: bool) -> None:
        """Read a POST's reply stream until the reply; resume it (handshake era) if it ends first.

        Resuming is a GET with ``Last-Event-ID``, within the call's deadline: at most
        ``reconnect_attempts`` reconnects in a row that bring no progress (a new event id
        or a message); progress starts the count again.
        """
        parser = SSEParser(self._max, typed_without_data=True)
        odd: set[str] = set()
        failures = 0
        deliver = functools.partial(self._deliver_reply, request_id=request_id, learn=learn)
        post = response  # _handle checked it and _exchange closes it; a resumed stream is checked and closed here
        while True:
            mark = parser.last_event_id, parser.messages
            try:
                if response is not post and not (200 <= response.status_code < 300
                                                 and wire.is_event_stream(response)):
                    error = wire.status_error(response, "resuming the reply stream was refused")
                    raise ConnectionClosed(f"reply stream lost and could not be resumed: {error}", outcome_unknown=True)
                if self._pump_reply(response, parser, deliver, request_id, deadline, odd):
                    wire.finish_if_ready(response)
                    return
            finally:
                if response is not post:
                    response.close()
            if odd:
                raise _Dialect(odd)
            if not parser.saw_id or not parser.last_event_id or rules.is_modern(message):
                raise ConnectionClosed(
                    "the server closed the reply stream before the reply"
                    + (" (2026-07-28 streams cannot be resumed: the request is lost)" if rules.is_modern(message)
                       else " (no event id to resume from)"), outcome_unknown=True)
            if (parser.last_event_id, parser.messages) != mark:
                failures = 0  # progress: the budget counts attempts without it
            if failures == self._attempts or not self._pause(parser, failures + 1, deadline):
                break
            failures += 1
            try:
                response = self._get(parser.last_event_id, deadline)
            except ConnectionClosed as exc:
                # The server cannot even be reached: retrying would only make the caller wait
                # out its timeout (RELIABILITY C4).  Fail now; the outcome is unknown.
                raise ConnectionClosed(f"reply stream lost and could not be resumed: {exc}",
                                       outcome_unknown=True) from None
        self._check_open()
        if deadline is not None and deadline.passed():
            raise deadline.expired("the reply stream was being resumed and got no reply")
        raise ConnectionClosed(f"reply stream lost; gave up after {self._attempts} reconnects without"
                               " progress", outcome_unknown=True)

    def _pump_reply(self, response: requests.Response, parser: SSEParser, deliver: Callable[[Any], None],
                    request_id: Any, deadline: Deadline | None, odd: set[str] | None = None) -> bool:
        """:func:`.pump` a reply stream; whether the reply came (else the stream ended or broke).

        A broken read raises only when it is the end of the exchange: closed, cancelled or
        out of time; else the stream may be resumed.
        """
        try:
            return pump(response, parser, deliver, wanted=request_id, deadline=deadline, idle=self._timeout[1],
                        odd=odd)
        except (MessageTooLarge, _Dialect):
            raise
        except Exception as exc:  # noqa: BLE001 - see above
            exchange = interrupt.current()
            if self._closed.is_set() or (exchange is not None and exchange.aborted) or (
                    deadline is not None and deadline.passed()):
                raise
            log.debug("SSE stream broke: %s", wire.redact_text(str(exc)))
            return False

    def _pause(self, parser: SSEParser, failures: int, deadline: Deadline | None = None) -> bool:
        """Wait before reconnect number *failures* (1: the first since progress); whether to make it.


        Not when the transport closed meanwhile or the deadline passed.

        The server's ``retry`` (at least 0.1 s) is the floor and the base of the backoff;
        without one, ``retry_delay`` is.  Later attempts back off exponentially with full
        jitter above that floor; nothing waits longer than ``max_retry_delay``.
        """
        retry = self._retry_delay if parser.retry is None else max(parser.retry / 1000.0, _MIN_RETRY)
        floor = min(retry, self._max_retry_delay)
        wait = max(floor, random.uniform(0, min(self._max_retry_delay, floor * 2 ** (failures - 1))))
        closed = self._closed.wait(wait if deadline is None else deadline.remaining(wait))
        return not closed and not (deadline is not None and deadline.passed())

    def _post_quietly(self, message: Mapping[str, Any], body: bytes) -> None:
        """Worker thread: POST a notification, bounded; a failure is only logged."""
        try:
            self._post(self.url, self._post_headers(message), str(message.get("method")),
                       Deadline(min(_NOTIFY_TIMEOUT, self._timeout[1])), body)
        except Exception as exc:  # noqa: BLE001 - best effort, like the notification itself
            log.debug("could not send %s: %s", message.get("method"), type(exc).__name__)

    # -- GET streams -----------------------------------------------------------------------

    def _get(self, last_event_id: str | None, deadline: Deadline | None = None) -> requests.Response:
        """Open a GET stream (resuming from *last_event_id* when given one), in the current exchange.

        :raises ConnectionClosed: when it failed (:class:`ClientClosed` once closed).
        """
        headers = self._session_headers({"Accept": "text/event-stream"})
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        return self._request("GET", self.url, headers=headers, what="GET stream", deadline=deadline)

    def _ensure_listener(self, deadline: Deadline | None) -> None:
        """Start the GET stream and wait (bounded) until the server answered the GET.

        Waiting means the stream is open before the handshake returns: a notification
        the server sends right after it is not missed, and the GET never races the
        first requests.  The wait ends by the call's deadline (the GET goes on in its
        thread) and at once when the transport closes.
        """
        if self._listener is not None and self._listener.is_alive():
            return
        # close() sets it from now on (and once closed, _spawn refuses: no wait at all).
        answered = self._listener_answered = threading.Event()
        self._listener = self._spawn(self._listen_loop, answered, name="get")
        wait = min(self._timeout[0], 5.0)
        answered.wait(wait if deadline is None else deadline.remaining(wait))

    def _listen_loop(self, answered: threading.Event) -> None:
        parser = SSEParser(self._max)
        failures = 0
        while True:
            mark = parser.last_event_id, parser.messages
            try:
                with self._registered(object()):
                    try:
                        response = self._get(mark[0] or None)
                    finally:
                        answered.set()
                    status = response.status_code
                    # A 2xx that is not a stream is an SPA fallback or a JSON error page:
                    # retrying it is a reconnect loop (awslabs/mcp#3352), so it means "no stream".
                    if status in _NO_STREAM or status in (401, 403) or (
                            200 <= status < 300 and not wire.is_event_stream(response)):
                        log.debug("no listening stream (GET answered %s)", status)
                        response.close()
                        return
                    with response:
                        if 200 <= status < 300:
                            pump(response, parser, self._on_message)
            except ClientClosed:
                return
            except MessageTooLarge as exc:
                log.warning("listening stream: %s", exc)
            except Exception as exc:  # noqa: BLE001 - a failed GET or a broken stream is reconnected below
                log.debug("listening stream: %s", wire.redact_text(str(exc)))
            if (parser.last_event_id, parser.messages) != mark:
                failures = 0  # progress
            failures += 1
            if failures > self._attempts:
                log.warning("listening stream lost; gave up after %d reconnects", self._attempts)
                return
            if not self._pause(parser, failures):
                return

    # -- closing ---------------------------------------------------------------------------

    def _interrupt_streams(self) -> None:
        answered = self._listener_answered
        if answered is not None:  # a caller waiting for the GET returns at once
            answered.set()

    def _before_join(self) -> None:
        """DELETE the session (bounded)."""
        if self.session_id is None:
            return
        import requests

        try:
            response = wire.http_request(self._sender, "DELETE", self.url, headers=self._session_headers(),
                                           timeout=(self._delete_timeout, self._delete_timeout), follow_redirects=False)
            response.close()
        except (requests.RequestException, HTTPStatusError) as exc:
            log.debug("DELETE of the session failed (ignored): %s", type(exc).__name__)
