"""The Streamable HTTP transport (MCP 2025-03-26 … 2026-07-28).

Every message is a POST to one URL, bounded by the call's deadline (the
``deadline`` given to :meth:`StreamableHTTPTransport.send`: connect, headers
and a JSON body are all read within it; past it the request fails with
:class:`~mcpsync.exceptions.RequestTimeout`).  The caller's thread does the
POST, and :meth:`~StreamableHTTPTransport.close` or a cancellation interrupts
it even before the headers arrive (:mod:`.track`, :mod:`.inflight`).  With ``detach=True``
(``request_async``), or with a ``requests.Session`` of the user's (whose
sockets we cannot reach before the headers), a worker thread does the POST
and the caller waits only on its reply.  What each reply means:

* ``202``/empty body: accepted (notifications and responses);
* ``application/json``: the reply is read and delivered before :meth:`send`
  returns;
* ``text/event-stream``: the caller's thread reads the stream while its
  bytes come promptly (at most 2 ms per segment, 20 ms in all), so a quick
  reply costs no thread switch (:mod:`.inline_reply`); whatever is left then
  goes to a reader thread (:mod:`.streams`)
  ``mcpsync-http-sse-N``, so the caller's timeout, progress and cancellation
  work as for any request.  Every message on the stream (replies,
  notifications, server requests) is delivered as its event arrives, never
  waiting for the stream to end;
* any other status raises a typed error from :meth:`send`, so exactly that
  request fails at once; a connection failure raises
  :class:`~mcpsync.exceptions.ConnectionClosed`.  Exception: a 2026-07-28
  request refused with a recognised modern JSON-RPC error in the body (e.g.
  -32022) gets that error as its reply, so the client can retry instead of
  falling back to the handshake era.

Handshake era: after the handshake a listening GET stream runs on
``mcpsync-http-get-N`` (405 = the server has none); a POST stream that ends
before its reply is resumed (:mod:`.streams`); a 404 for a request that
carried a session id means the session expired, and one re-initialize runs
inside the transport (:mod:`.reinit`).

2026-07-28 (requests whose ``_meta`` names a protocol version): no session,
no GET stream, no DELETE; routing headers; a lost
response stream loses its request (``outcome_unknown``, no resumption);
cancelling a request closes its response stream instead of POSTing
``notifications/cancelled``; a ``subscriptions/listen`` stream is an ordinary
long-lived POST stream.

What the transport knows of MCP methods (the rules above that name one) is
all in :mod:`.mcp_rules`.  The transport itself is plain wiring of composed
parts, each owning its state: :class:`~.inflight.InFlight` (requests in
flight), :class:`~.streams.StreamReader` (SSE streams),
:class:`~.reinit.Reinitializer` (its own requests), :class:`~.workers.Workers`
(its threads) and :class:`~.fast_send.Sender` (one cheap request).

Example::

    t = StreamableHTTPTransport("http://127.0.0.1:8000/mcp")
    client = mcpsync.Client(t)

.. versionadded:: 0.1
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import (
    ClientClosed,
    HTTPStatusError,
    McpError,
    ProtocolError,
    RequestCancelled,
    RequestTimeout,
    SessionExpired,
)
from mcpsync.transports.base import CloseHandler, MessageHandler, RequestErrorHandler, WriteErrorHandler, encode_message
from mcpsync.transports.http import common as common
from mcpsync.transports.http import mcp_rules as rules
from mcpsync.transports.http import track as track
from mcpsync.transports.http.endpoint import HttpEndpoint
from mcpsync.transports.http.inflight import InFlight
from mcpsync.transports.http.inline_reply import read_reply_inline
from mcpsync.transports.http.reinit import Reinitializer
from mcpsync.transports.http.streams import StreamReader
from mcpsync.transports.http.workers import Workers

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["FallbackToLegacy", "StreamableHTTPTransport"]

log = logging.getLogger("mcpsync.transports.http.streamable")

_ids = itertools.count(1)
_ACCEPT = "application/json, text/event-stream"
_NO_STREAM = frozenset({400, 404, 405})
#: Bound on a notification POSTed off the caller's thread (a cancellation).
_NOTIFY_TIMEOUT = 5.0


class FallbackToLegacy(McpError):
    """Internal: the server refused our POSTs as a 2024-11-05 HTTP+SSE server would."""

    def __init__(self, error: HTTPStatusError) -> None:
        super().__init__(str(error))
        self.error = error


class StreamableHTTPTransport(HttpEndpoint):
    """MCP over Streamable HTTP, with ``requests``.

    :param url: the MCP endpoint.
    :param auth: a ``requests`` auth object (e.g. :class:`mcpsync.auth.OAuth`).
    :param headers: extra headers sent with every request.
    :param session: a ``requests.Session`` to use (proxies, TLS, retries); it
        is not closed by :meth:`close`.  By default a private one is made.
    :param connect_timeout: seconds to connect.
    :param read_timeout: the idle timeout: seconds without a byte from the
        server (any byte, keep-alive comments included) before a read fails.
    :param max_message_bytes: cap on one JSON body or one SSE event.
    :param follow_redirects: follow same-origin redirects (never cross-origin).
    :param reconnect_attempts: reconnects in a row of one stream that bring no
        progress (a new event id or message) before giving up.
    :param retry_delay: seconds before the first reconnect when the server sent
        no ``retry``; later ones back off exponentially with jitter.
    :param max_retry_delay: cap on any reconnect delay (a server's ``retry`` too).
    :param delete_timeout: bound on the ``DELETE`` sent by :meth:`close`.
    :param session_retry: after a re-initialize, which failed POST to resend:
        ``"safe"`` (all but ``tools/call``), ``"all"`` or ``"none"``.
    :param listen: open the GET listening stream after the handshake.
    """

    def __init__(
        self,
        url: str,
        *,
        auth: Any = None,
        headers: Mapping[str, str] | None = None,
        session: requests.Session | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 300.0,
        max_message_bytes: int = 32 * 1024 * 1024,
        follow_redirects: bool = True,
        reconnect_attempts: int = 3,
        retry_delay: float = 1.0,
        max_retry_delay: float = 30.0,
        delete_timeout: float = 2.0,
        session_retry: str = "safe",
        listen: bool = True,
        _fallback: bool = False,
    ) -> None:
        if session_retry not in ("safe", "all", "none"):
            raise ValueError("session_retry must be 'safe', 'all' or 'none'")
        self._init_endpoint(
            url, auth=auth, headers=headers, session=session, connect_timeout=connect_timeout,
            read_timeout=read_timeout, max_message_bytes=max_message_bytes, follow_redirects=follow_redirects,
        )
        self._delete_timeout = delete_timeout
        self._session_retry = session_retry
        self._listen = listen
        self._fallback = _fallback
        self._n = next(_ids)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._close_reported = False
        self._on_message: MessageHandler | None = None
        self._on_close: CloseHandler | None = None
        self._on_request_error: RequestErrorHandler | None = None
        #: What the transport learned of the MCP session (see :mod:`.mcp_rules`).
        self._state = rules.McpState()
        self._inflight = InFlight(self._closed)
        self._workers = Workers(self._n)
        self._streams = StreamReader(
            max_bytes=max_message_bytes, attempts=reconnect_attempts, retry_delay=retry_delay,
            max_retry_delay=max_retry_delay, connect_timeout=connect_timeout, closed=self._closed,
            workers=self._workers, get=self._get, deliver=self._deliver, fail=self._fail_request,
            is_cancelled=self._inflight.stream_cancelled, untrack=self._inflight.untrack,
        )
        self._reinit = Reinitializer(
            n=self._n, state=self._state, post=self._post, headers=self._headers_for, streams=self._streams,
            max_bytes=max_message_bytes, pass_up=self._pass_up, url=url, closed=self._closed,
        )
        #: Whether the caller's own thread may POST (its sockets are reachable).
        self._inline: bool | None = None
        #: The deadline of the call the current thread is making (re-initialize, resends).
        self._call = threading.local()
        #: Set when a 2026-07-28 probe POST was refused outright (404/405, no JSON-RPC body).
        self._post_refused: HTTPStatusError | None = None

    @property
    def reinitializations(self) -> int:
        """Re-initializations performed after the session expired."""
        return self._reinit.count

    @property
    def reconnects(self) -> int:
        """Reconnections of SSE streams (resumptions and listening stream)."""
        return self._streams.reconnects

    # -- Transport API -------------------------------------------------------------------

    def describe(self) -> str:
        return f"Streamable HTTP {common.redact_url(self.url)}"

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` in use, if the server assigned one."""
        return self._state.session_id

    @property
    def protocol_version(self) -> str | None:
        """The negotiated handshake-era version, sent as ``MCP-Protocol-Version``."""
        return self._state.protocol_version

    def start(
        self,
        on_message: MessageHandler,
        on_close: CloseHandler,
        on_request_error: RequestErrorHandler | None = None,
        *,
        deadline: float | None = None,
    ) -> None:
        """Remember the callbacks; no network I/O happens until the first :meth:`send`.

        :param on_request_error: fails one pending request; without it a lost
            reply is reported as a JSON-RPC error response (code -32000, with
            ``data.outcome_unknown``).
        """
        self._on_message = on_message
        self._on_close = on_close
        self._on_request_error = on_request_error

    def send(
        self,
        message: Mapping[str, Any],
        *,
        deadline: float | None = None,
        detach: bool = False,
        on_write_error: WriteErrorHandler | None = None,
    ) -> None:
        """POST one message; see the module docstring for what each reply means.

        :param deadline: ``time.monotonic()`` value by which the request must
            be answered (connect, headers and a JSON body within it).
        :param detach: POST on a worker thread and return at once; failures
            then reach the request's caller through ``on_request_error``.
        :raises FallbackToLegacy: (``initialize`` only) when the server refused
            our POSTs as a 2024-11-05 server does; :class:`AutoHTTPTransport`
            catches it.
        :raises HTTPStatusError: for any other non-success status.
        :raises SessionExpired: when the session expired and the request may
            not be resent, or the re-initialize failed.
        :raises RequestTimeout: when *deadline* passed first (a handshake-era
            request is then cancelled with ``notifications/cancelled``).
        :raises ConnectionClosed: when the server cannot be reached.
        """
        body = encode_message(message)
        if self._closed.is_set():
            raise ClientClosed("transport is closed")
        method = message.get("method")
        state = self._state
        if method == rules.CANCELLED:
            cancelled = rules.cancelled_request_id(message)
            if cancelled is not None:
                self._inflight.abort(cancelled)  # its POST, if still waiting for the reply
                self._streams.give_up(cancelled)  # no more resumption GETs for it
            if state.cancels_by_closing():
                if cancelled is not None:  # 2026-07-28: closing the stream is the cancellation
                    self._inflight.cancel_by_closing(cancelled)
            else:  # off the caller's thread: cancel() never waits for the server
                self._workers.spawn(self._post_quietly, dict(message), body, name="notify")
            return
        if method == rules.INITIALIZE and "id" in message and self._fallback and self._post_refused is not None:
            raise FallbackToLegacy(self._post_refused)
        state.on_send(message)
        request_id = message.get("id") if method is not None else None
        modern = rules.is_modern(message)
        if modern and isinstance(request_id, (int, str)):
            self._inflight.add_modern(request_id, str(method))
        if isinstance(request_id, (int, str)) and method != rules.INITIALIZE and (detach or not self._may_inline()):
            self._workers.spawn(self._send_detached, message, body, modern, request_id, deadline, name="post")
            return
        self._send_now(message, body, modern, request_id, deadline)
        if method == rules.INITIALIZED and self._listen:
            self._streams.ensure_listener(deadline)

    def _may_inline(self) -> bool:
        inline = self._inline
        if inline is None:
            inline = self._inline = track.is_tracking(self._session, self._sender.proxies(self.url))
        return inline

    def _send_now(self, message: Mapping[str, Any], body: bytes, modern: bool, request_id: Any,
                  deadline: float | None) -> None:
        """POST in this thread, abortable by :meth:`close` and by cancelling *request_id*."""
        tracked = isinstance(request_id, (int, str))
        exchange = self._inflight.begin(request_id) if tracked else None
        self._call.deadline = deadline
        try:
            self._exchange(message, body, modern)
        except BaseException as exc:
            if modern and isinstance(request_id, (int, str)):
                self._inflight.untrack(request_id, forget=True)
            if isinstance(exc, RequestTimeout) and not modern and request_id is not None \
                    and message.get("method") != rules.INITIALIZE and not self._closed.is_set():
                # The server has the request: tell it we gave up (2026-07-28: the closed stream says it).
                cancel = {"jsonrpc": "2.0", "method": rules.CANCELLED,
                          "params": {"requestId": request_id, "reason": "timeout"}}
                self._workers.spawn(self._post_quietly, cancel, encode_message(cancel), name="notify")
            if exchange is not None and exchange.aborted and not isinstance(exc, RequestTimeout):
                # Whatever the aborted read raised, the story is the abort.
                raise (ClientClosed("transport is closed") if self._closed.is_set()
                       else RequestCancelled("request was cancelled")) from None
            raise
        finally:
            self._call.deadline = None
            if tracked:
                self._inflight.end(request_id)

    def _send_detached(self, message: Mapping[str, Any], body: bytes, modern: bool, request_id: Any,
                       deadline: float | None) -> None:
        """Worker thread: POST and deliver; a failure fails just that request.

        (A request already settled, e.g. cancelled, is not failed again: the
        session ignores it.)
        """
        try:
            self._send_now(message, body, modern, request_id, deadline)
        except BaseException as exc:  # handed to the request's caller
            self._fail_request(request_id, exc)

    def _post_quietly(self, message: dict[str, Any], body: bytes) -> None:
        """Worker thread: POST a notification, bounded; a failure is only logged."""
        self._call.deadline = time.monotonic() + min(_NOTIFY_TIMEOUT, self._timeout[1])
        try:
            self._exchange(message, body, False)
        except Exception as exc:  # noqa: BLE001 - best effort, like the notification itself
            log.debug("could not send %s: %s", message.get("method"), type(exc).__name__)
        finally:
            self._call.deadline = None

    def close(self) -> None:
        """DELETE the session (bounded), unblock every reader, join them; idempotent."""
        with self._lock:
            first = not self._closed.is_set()
            self._closed.set()
        self._inflight.close_all()
        self._streams.shutdown_all()
        if first:
            self._delete_session()
            self._workers.join(2.0)  # one budget for all: close() stays bounded
            if self._own_session:
                self._session.close()
        self._report_close(ClientClosed("transport closed"))

    # -- POST -----------------------------------------------------------------------------

    def _headers_for(self, *, accept: str = _ACCEPT, json_body: bool = True) -> dict[str, str]:
        headers = dict(self._headers)
        headers["Accept"] = accept
        if json_body:
            headers["Content-Type"] = "application/json"
        headers.update(self._state.headers())
        return headers

    def _post(self, body: bytes, *, what: str, headers: dict[str, str] | None = None) -> requests.Response:
        import requests

        deadline: float | None = getattr(self._call, "deadline", None)
        timeout = self._bounded(deadline, what)
        try:
            return common.http_request(self._sender, "POST", self.url, headers=headers or self._headers_for(),
                                       timeout=timeout, data=body, follow_redirects=self._follow,
                                       deadline=deadline)
        except requests.RequestException as exc:
            if self._closed.is_set():
                raise ClientClosed("transport is closed") from common.sanitized(exc)
            if deadline is not None and time.monotonic() >= deadline - 0.01 \
                    and isinstance(exc, (requests.Timeout, requests.ConnectionError)):
                raise self._timed_out(what, deadline) from common.sanitized(exc)
            raise common.connection_error(exc, f"{what} to {common.redact_url(self.url)} failed",
                                          outcome_unknown=not common.never_connected(exc)) from common.sanitized(exc)

    def _timed_out(self, what: str, deadline: float) -> RequestTimeout:
        method = what.removeprefix("POST ").split(" ", 1)[0]
        return RequestTimeout(f"{what} got no reply by its deadline ({common.redact_url(self.url)})",
                              method=method, elapsed=max(0.0, time.monotonic() - deadline))

    def _read_json_body(self, response: requests.Response, what: str) -> bytes:
        """The whole body, up to the cap, each read bounded by what is left of the call's deadline."""
        deadline: float | None = getattr(self._call, "deadline", None)
        if deadline is None:
            return common.read_body(response, self._max)

        def bound() -> None:
            # Each read waits at most what is left (a body trickling in, then stalling, would
            # otherwise overrun by one whole read wait); the deadline is checked between reads.
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._timed_out(what, deadline)
            common.bound_next_read(response, left)

        try:
            return common.read_body(response, self._max, bound)
        except McpError:
            raise
        except Exception:
            if time.monotonic() >= deadline - 0.01:
                raise self._timed_out(what, deadline) from None
            raise

    def _exchange(self, message: Mapping[str, Any], body: bytes, modern: bool) -> None:
        """POST *message* and handle the answer, with the one-resend recoveries."""
        method = message.get("method")
        what = f"POST {method or 'response'}"
        sent_session = self._state.session_id

        def headers() -> dict[str, str] | None:
            return {**self._headers_for(), **self._state.routing_headers(message)} if modern else None

        response = self._post(body, what=what, headers=headers())
        if response.status_code == 404 and sent_session is not None and method != "initialize":
            response.close()
            deadline: float | None = getattr(self._call, "deadline", None)
            if self._reinit.reinitialize(sent_session, deadline) and self._listen:
                self._streams.ensure_listener(deadline)
            if not rules.may_resend(message, self._session_retry):
                raise SessionExpired(404, "session expired; the server re-initialized but"
                                     f" {method or 'this message'} was not resent (session_retry)")
            response = self._post(body, what=f"{what} (after re-initialize)", headers=headers())
            if response.status_code == 404:
                response.close()
                raise SessionExpired(404, "session expired again right after re-initializing")
        if self._handle_post_response(response, message, modern, retry_mismatch=modern):
            # Our x-mcp-header annotations were stale: refresh them, resend once.
            self._reinit.relist_tools(message)
            response = self._post(body, what=f"{what} (after re-listing tools)", headers=headers())
            self._handle_post_response(response, message, modern, retry_mismatch=False)

    def _handle_post_response(self, response: requests.Response, message: Mapping[str, Any], modern: bool, *,
                              retry_mismatch: bool) -> bool:
        """Deliver what *response* carries; ``True`` asks for a resend after a header mismatch."""
        method = message.get("method")
        request_id = message.get("id") if method is not None else None
        status = response.status_code
        if not 200 <= status < 300:
            raw = common.read_error_body(response)
            response.close()
            rpc_body = rules.rpc_error_body(raw)
            reply = rules.modern_error(status, rpc_body, request_id) if modern else None
            if reply is not None:
                if retry_mismatch and method == "tools/call" and reply["error"]["code"] == rules.HEADER_MISMATCH:
                    return True
                self._deliver(reply)
                return False
            error = common.status_error(response, f"{method or 'response'} was refused", raw=raw)
            if self._fallback and status in _NO_STREAM:
                if method == "initialize":
                    raise FallbackToLegacy(error) from None
                if modern and status != 400 and rpc_body is None:
                    # POST itself is refused, as by a 2024-11-05 server: skip the initialize POST.
                    self._post_refused = error
            raise error
        if method == rules.INITIALIZE:
            try:
                self._state.capture_session_id(response.headers.get("Mcp-Session-Id"))
            except ProtocolError:
                response.close()
                raise
        if modern and request_id is not None:
            if self._inflight.stream_cancelled(request_id):
                response.close()  # cancelled while the POST was in flight
                return False
            self._inflight.track(request_id, response)
        if common.is_event_stream(response):
            if request_id is None:
                response.close()  # a stream for a notification: nothing to wait for
                return False
            # The headers came by the deadline; from here the stream's idle timeout governs its
            # reads (a listen stream outlives any call), and the caller's wait its deadline.
            common.set_read_timeout(response, self._timeout[1])
            if read_reply_inline(self._streams, response, request_id, not modern, self._max) and modern:
                self._inflight.untrack(request_id)
            return False
        try:
            raw = self._read_json_body(response, f"POST {method or 'response'}")
        except McpError:  # a timeout, a reply too large, a body that does not decode
            raise
        except Exception as exc:
            if request_id is not None and self._inflight.stream_cancelled(request_id):
                return False
            raise common.connection_error(exc, "reading the reply failed", outcome_unknown=True) from common.sanitized(exc)
        finally:
            response.close()
            if modern and request_id is not None:
                self._inflight.untrack(request_id)
        if not raw.strip():
            return False  # 202 or an empty 200: accepted
        if not common.is_json(response) and request_id is not None:
            raise ProtocolError(
                f"{method} got a {status} reply of type {response.headers.get('Content-Type')!r}")
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            raise ProtocolError(f"{method} got a reply that is not JSON: {exc}") from None
        for item in payload if isinstance(payload, list) else [payload]:
            self._deliver(item)
        return False

    def _deliver(self, item: Any) -> None:
        """Pass one message up, noting the negotiated version and tool annotations on the way."""
        if isinstance(item, dict) and "method" not in item and isinstance(item.get("id"), (int, str)):
            item = self._state.on_reply(item, self._inflight.pop_method(item["id"]))
        if self._on_message is not None:
            self._on_message(item)

    def _pass_up(self, item: Any) -> None:
        """Pass one message up as it is (from a stream of the transport's own requests)."""
        if self._on_message is not None:
            self._on_message(item)

    def _fail_request(self, request_id: Any, exc: BaseException) -> None:
        """Fail one request whose reply is lost (without ``on_request_error``: as an error reply)."""
        self._inflight.pop_method(request_id)
        if self._closed.is_set():
            return
        if self._on_request_error is not None:
            self._on_request_error(request_id, exc)
        elif self._on_message is not None:
            self._on_message({"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32000, "message": str(exc),
                "data": {"mcpsync": "transport", "outcome_unknown": True}}})

    # -- GET --------------------------------------------------------------------------------

    def _get(self, last_event_id: str | None) -> requests.Response:
        """Open a GET stream (resuming from *last_event_id* when given one).

        Registered in :class:`~.inflight.InFlight` like a POST, so that :meth:`close`
        aborts it while it waits for the headers (an open stream is shut down by
        :meth:`~.streams.StreamReader.shutdown_all`).

        :raises ConnectionClosed: when it failed (:class:`ClientClosed` once closed).
        """
        import requests

        headers = self._headers_for(accept="text/event-stream", json_body=False)
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        key = object()  # a GET has no request id: a key of its own
        self._inflight.begin(key)
        try:
            return common.http_request(self._sender, "GET", self.url, headers=headers,
                                       timeout=self._timeout, follow_redirects=self._follow)
        except requests.RequestException as exc:
            if self._closed.is_set():
                raise ClientClosed("transport is closed") from common.sanitized(exc)
            raise common.connection_error(exc, "GET stream failed") from common.sanitized(exc)
        finally:
            self._inflight.end(key)

    # -- closing --------------------------------------------------------------------------

    def _delete_session(self) -> None:
        if self._state.session_id is None:
            return
        import requests

        try:
            response = common.http_request(
                self._sender, "DELETE", self.url, headers=self._headers_for(json_body=False),
                timeout=(self._delete_timeout, self._delete_timeout), follow_redirects=False)
            response.close()
        except (requests.RequestException, HTTPStatusError) as exc:
            log.debug("DELETE of the session failed (ignored): %s", type(exc).__name__)

    def _report_close(self, exc: BaseException) -> None:
        with self._lock:
            if self._close_reported:
                return
            self._close_reported = True
        if self._on_close is not None:
            self._on_close(exc)
