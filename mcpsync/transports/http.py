"""The Streamable HTTP transport (MCP 2025-03-26 … 2025-11-25).

Every message is a POST to one URL.  The caller's thread does the POST:

* ``202``/empty body: accepted (notifications and responses);
* ``application/json``: the reply is read and delivered before :meth:`send`
  returns;
* ``text/event-stream``: the stream is handed to a reader thread
  ``mcpsync-http-sse-N`` the moment the headers arrive, so the caller's
  timeout, progress and cancellation work as for any request; the reader
  delivers every message on the stream (replies, notifications, server
  requests) as its event arrives, never waiting for the stream to end;
* any other status raises a typed error from :meth:`send`, so exactly that
  request fails at once; a connection failure raises
  :class:`~mcpsync.exceptions.ConnectionClosed`.

After the handshake a listening GET stream runs on ``mcpsync-http-get-N``
(405 = the server has none).  A POST stream that ends before its reply is
resumed with ``GET`` + ``Last-Event-ID`` after the server's ``retry`` delay,
within a bounded budget; without an event id there is nothing to resume and
that request fails with ``outcome_unknown``.  A 404 for a request that carried
a session id means the session expired: one re-initialize, shared by all
threads, runs inside the transport (see :mod:`._session_reinit` notes in
``docs/transports.rst``).

Example::

    t = StreamableHTTPTransport("http://127.0.0.1:8000/mcp")
    client = mcpsync.Client(t)

.. versionadded:: 0.1
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
import random
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..exceptions import (
    ClientClosed,
    ConnectionClosed,
    HTTPStatusError,
    McpError,
    MessageTooLarge,
    ProtocolError,
    SessionExpired,
)
from . import _http_common as common
from ._sse import SSEParser
from .base import CloseHandler, MessageHandler, Transport, encode_message

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["FallbackToLegacy", "RequestErrorHandler", "StreamableHTTPTransport"]

log = logging.getLogger("mcpsync.transports.http")

#: ``(request_id, exc)``: fail one pending request (optional third ``start`` callback).
RequestErrorHandler = Callable[["int | str", BaseException], None]

_ids = itertools.count(1)
_ACCEPT = "application/json, text/event-stream"
_NO_STREAM = frozenset({400, 404, 405})
_MAX_SESSION_ID = 1024


class FallbackToLegacy(McpError):
    """Internal: the initialize POST got 400/404/405; the server may speak 2024-11-05 SSE."""

    def __init__(self, error: HTTPStatusError) -> None:
        super().__init__(str(error))
        self.error = error


_VERSION_META = "io.modelcontextprotocol/protocolVersion"
#: Methods whose target is mirrored in ``Mcp-Name`` (2026-07-28).
_NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def _header_value(value: str) -> str:
    """A header-safe form of *value*: verbatim if printable ASCII, else the base64 sentinel."""
    if value.isascii() and value.isprintable() and value == value.strip() and not (
            value.startswith("=?base64?") and value.endswith("?=")):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def _modern_headers(message: Mapping[str, Any]) -> dict[str, str]:
    """2026-07-28 routing headers, mirrored from the body (empty for handshake-era messages)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(_VERSION_META) if isinstance(meta, dict) else None
    method = message.get("method")
    if not isinstance(version, str) or not isinstance(method, str):
        return {}
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    key = _NAME_PARAMS.get(method)
    name = params.get(key) if key is not None and isinstance(params, dict) else None
    if isinstance(name, str):
        headers["Mcp-Name"] = _header_value(name)
    return headers


def _valid_session_id(value: str) -> bool:
    return 0 < len(value) <= _MAX_SESSION_ID and all(0x21 <= ord(c) <= 0x7E for c in value)


class StreamableHTTPTransport(Transport):
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
    :param reconnect_attempts: reconnects of one stream without progress before
        giving up (progress = a new event) .
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
        reconnect_attempts: int = 5,
        retry_delay: float = 1.0,
        max_retry_delay: float = 30.0,
        delete_timeout: float = 2.0,
        session_retry: str = "safe",
        listen: bool = True,
        _fallback: bool = False,
    ) -> None:
        if session_retry not in ("safe", "all", "none"):
            raise ValueError("session_retry must be 'safe', 'all' or 'none'")
        if common.origin(url)[0] not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {common.redact_url(url)}")
        self.url = url
        self._auth = auth
        self._headers = dict(headers or {})
        self._own_session = session is None
        self._session = session if session is not None else common.new_session()
        self._timeout = (connect_timeout, read_timeout)
        self._max = max_message_bytes
        self._follow = follow_redirects
        self._attempts = reconnect_attempts
        self._retry_delay = retry_delay
        self._max_retry_delay = max_retry_delay
        self._delete_timeout = delete_timeout
        self._session_retry = session_retry
        self._listen = listen
        self._fallback = _fallback
        self._n = next(_ids)
        self._lock = threading.Lock()
        self._reinit_lock = threading.Lock()
        self._closed = threading.Event()
        self._close_reported = False
        self._on_message: MessageHandler | None = None
        self._on_close: CloseHandler | None = None
        self._on_request_error: RequestErrorHandler | None = None
        self._session_id: str | None = None
        self._protocol_version: str | None = None
        self._init_message: dict[str, Any] | None = None
        self._initialized_message: dict[str, Any] | None = None
        self._internal_ids = itertools.count(1)
        self._streams: set[requests.Response] = set()
        self._threads: set[threading.Thread] = set()
        self._listener: threading.Thread | None = None
        self._thread_ids = itertools.count(1)
        #: Re-initializations performed after the session expired.
        self.reinitializations = 0
        #: Reconnections of SSE streams (resumptions and listening stream).
        self.reconnects = 0

    # -- Transport API -------------------------------------------------------------------

    def describe(self) -> str:
        return f"Streamable HTTP {common.redact_url(self.url)}"

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` in use, if the server assigned one."""
        return self._session_id

    @property
    def protocol_version(self) -> str | None:
        """The negotiated version, sent as ``MCP-Protocol-Version``."""
        return self._protocol_version

    def start(
        self,
        on_message: MessageHandler,
        on_close: CloseHandler,
        on_request_error: RequestErrorHandler | None = None,
    ) -> None:
        """Remember the callbacks; no network I/O happens until the first :meth:`send`.

        :param on_request_error: fails one pending request; without it a lost
            reply is reported as a JSON-RPC error response (code -32000, with
            ``data.outcome_unknown``).
        """
        self._on_message = on_message
        self._on_close = on_close
        self._on_request_error = on_request_error

    def send(self, message: Mapping[str, Any]) -> None:
        """POST one message; see the module docstring for what each reply means.

        :raises FallbackToLegacy: (``initialize`` only) when the server answered
            400/404/405; :class:`AutoHTTPTransport` catches it.
        :raises HTTPStatusError: for any other non-success status.
        :raises SessionExpired: when the session expired and the request may
            not be resent, or the re-initialize failed.
        :raises ConnectionClosed: when the server cannot be reached.
        """
        body = encode_message(message)
        if self._closed.is_set():
            raise ClientClosed("transport is closed")
        method = message.get("method")
        if method == "initialize" and "id" in message:
            self._init_message = dict(message)
        elif method == "notifications/initialized":
            self._initialized_message = dict(message)
        sent_session = self._session_id
        modern = _modern_headers(message)
        headers = {**self._headers_for(), **modern} if modern else None
        response = self._post(body, what=f"POST {method or 'response'}", headers=headers)
        if response.status_code == 404 and sent_session is not None and method != "initialize":
            response.close()
            self._reinitialize(sent_session)
            if not self._may_resend(message):
                raise SessionExpired(404, "session expired; the server re-initialized but"
                                     f" {method or 'this message'} was not resent (session_retry)")
            response = self._post(body, what=f"POST {method or 'response'} (after re-initialize)",
                                  headers={**self._headers_for(), **modern} if modern else None)
            if response.status_code == 404:
                response.close()
                raise SessionExpired(404, "session expired again right after re-initializing")
        self._handle_post_response(response, message)
        if method == "notifications/initialized" and self._listen:
            self._ensure_listener()

    def close(self) -> None:
        """DELETE the session (bounded), unblock every reader, join them; idempotent."""
        with self._lock:
            if self._closed.is_set():
                first = False
            else:
                self._closed.set()
                first = True
            streams = list(self._streams)
        for response in streams:
            common.shutdown_response(response)
        if first:
            self._delete_session()
            current = threading.current_thread()
            with self._lock:
                threads = list(self._threads)
            for thread in threads:
                if thread is not current:
                    thread.join(timeout=2.0)
            if self._own_session:
                self._session.close()
        self._report_close(ClientClosed("transport closed"))

    # -- POST -----------------------------------------------------------------------------

    def _headers_for(self, *, accept: str = _ACCEPT, json_body: bool = True) -> dict[str, str]:
        headers = dict(self._headers)
        headers["Accept"] = accept
        if json_body:
            headers["Content-Type"] = "application/json"
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        if self._protocol_version is not None:
            headers["MCP-Protocol-Version"] = self._protocol_version
        return headers

    def _post(self, body: bytes, *, what: str, headers: dict[str, str] | None = None) -> requests.Response:
        import requests

        try:
            return common.http_request(
                self._session, "POST", self.url, headers=headers or self._headers_for(), auth=self._auth,
                timeout=self._timeout, data=body, follow_redirects=self._follow,
            )
        except requests.RequestException as exc:
            if self._closed.is_set():
                raise ClientClosed("transport is closed") from exc
            raise common.connection_error(exc, f"{what} to {common.redact_url(self.url)} failed",
                                          outcome_unknown=True) from exc

    def _handle_post_response(self, response: requests.Response, message: Mapping[str, Any]) -> None:
        method = message.get("method")
        request_id = message.get("id") if method is not None else None
        status = response.status_code
        if not 200 <= status < 300:
            error = common.status_error(response, f"{method or 'response'} was refused")
            response.close()
            if method == "initialize" and status in _NO_STREAM and self._fallback:
                raise FallbackToLegacy(error) from None
            raise error
        if method == "initialize":
            self._capture_session(response)
        if common.is_event_stream(response):
            if request_id is None:
                response.close()  # a stream for a notification: nothing to wait for
                return
            # 2026-07-28 has no resumption: a lost stream is a cancelled request.
            resumable = not _modern_headers(message)
            self._spawn(self._read_post_stream, response, request_id, resumable, name="sse")
            return
        try:
            raw = b"".join(common.iter_body(response))
        except Exception as exc:
            raise common.connection_error(exc, "reading the reply failed", outcome_unknown=True) from exc
        finally:
            response.close()
        if not raw.strip():
            return  # 202 or an empty 200: accepted
        if len(raw) > self._max:
            raise MessageTooLarge(f"reply larger than {self._max} bytes")
        if not common.is_json(response) and request_id is not None:
            raise ProtocolError(
                f"{method} got a {status} reply of type {response.headers.get('Content-Type')!r}")
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            raise ProtocolError(f"{method} got a reply that is not JSON: {exc}") from None
        for item in payload if isinstance(payload, list) else [payload]:
            self._deliver(item)

    def _capture_session(self, response: requests.Response) -> None:
        value = response.headers.get("Mcp-Session-Id")
        if value is None:
            return
        if not _valid_session_id(value):
            response.close()
            raise ProtocolError("server sent an invalid Mcp-Session-Id (not visible ASCII or too long)")
        self._session_id = value

    def _deliver(self, item: Any) -> None:
        """Pass one message up, noting the negotiated version on the way."""
        if isinstance(item, dict) and "method" not in item and "id" in item:
            init = self._init_message
            result = item.get("result")
            if init is not None and item.get("id") == init.get("id") and isinstance(result, dict):
                version = result.get("protocolVersion")
                if isinstance(version, str):
                    self._protocol_version = version
        if self._on_message is not None:
            self._on_message(item)

    # -- SSE streams ----------------------------------------------------------------------

    def _spawn(self, target: Callable[..., None], *args: Any, name: str) -> threading.Thread:
        thread = threading.Thread(
            target=self._run_thread, args=(target, *args), daemon=True,
            name=f"mcpsync-http-{name}-{self._n}.{next(self._thread_ids)}",
        )
        with self._lock:
            self._threads.add(thread)
        thread.start()
        return thread

    def _run_thread(self, target: Callable[..., None], *args: Any) -> None:
        try:
            target(*args)
        except BaseException:  # a reader never dies silently
            log.exception("HTTP stream reader failed")
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _consume(self, response: requests.Response, parser: SSEParser, wanted: Any, *,
                 stop_at_reply: bool = True) -> bool:
        """Read one SSE response, delivering its messages; whether *wanted*'s reply passed.

        With *stop_at_reply* false the stream is read to its end even after the
        reply, so that its connection goes back to the pool.
        """
        got = False
        with self._lock:
            if self._closed.is_set():
                response.close()
                return False
            self._streams.add(response)
        try:
            for chunk in common.iter_body(response):
                for event in parser.feed(chunk):
                    if event.event != "message" or not event.data.strip():
                        continue
                    try:
                        payload = json.loads(event.data)
                    except ValueError:
                        log.warning("ignoring an SSE event that is not JSON")
                        continue
                    for item in payload if isinstance(payload, list) else [payload]:
                        self._deliver(item)
                        if wanted is not None and isinstance(item, dict) and "method" not in item \
                                and item.get("id") == wanted:
                            got = True
                            if stop_at_reply:
                                return True
        except MessageTooLarge:
            if got:
                return True
            raise
        except Exception as exc:
            if not self._closed.is_set():
                log.debug("SSE stream broke: %s", common.redact_text(str(exc)))
        finally:
            with self._lock:
                self._streams.discard(response)
            response.close()
        return got

    def _read_post_stream(self, response: requests.Response, request_id: Any, resumable: bool) -> None:
        parser = SSEParser(self._max)
        try:
            if self._consume(response, parser, request_id, stop_at_reply=False):
                return
        except MessageTooLarge as exc:
            self._fail_request(request_id, exc)
            return
        if self._closed.is_set():
            return
        if not resumable or not parser.saw_id or not parser.last_event_id:
            self._fail_request(request_id, ConnectionClosed(
                "the server closed the reply stream before the reply"
                + ("" if resumable else " (2026-07-28 streams cannot be resumed)")
                + (" (no event id to resume from)" if resumable else ""),
                outcome_unknown=True))
            return
        error = self._resume(parser, request_id)
        if error is not None:
            self._fail_request(request_id, error)

    def _delay(self, parser: SSEParser, failures: int) -> float:
        floor = parser.retry / 1000.0 if parser.retry is not None else self._retry_delay
        floor = min(floor, self._max_retry_delay)
        if failures <= 1:
            return floor
        backoff = min(self._max_retry_delay, self._retry_delay * 2 ** (failures - 1))
        return max(floor, random.uniform(0, backoff))

    def _get(self, last_event_id: str | None) -> requests.Response:
        import requests

        headers = self._headers_for(accept="text/event-stream", json_body=False)
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        try:
            return common.http_request(self._session, "GET", self.url, headers=headers, auth=self._auth,
                                       timeout=self._timeout, follow_redirects=self._follow)
        except requests.RequestException as exc:
            raise common.connection_error(exc, "GET stream failed") from exc

    def _resume(self, parser: SSEParser, request_id: Any) -> McpError | None:
        """Resume a POST stream with GET + Last-Event-ID; ``None`` once the reply arrived."""
        failures = 0
        last_error: McpError = ConnectionClosed("reply stream lost", outcome_unknown=True)
        while failures < self._attempts:
            failures += 1
            if self._closed.wait(self._delay(parser, failures)):
                return None
            self.reconnects += 1
            seen = parser.last_event_id
            try:
                response = self._get(seen)
            except ConnectionClosed as exc:
                last_error = exc
                continue
            if not 200 <= response.status_code < 300 or not common.is_event_stream(response):
                error = common.status_error(response, "resuming the reply stream was refused")
                response.close()
                return ConnectionClosed(f"reply stream lost and could not be resumed: {error}",
                                        outcome_unknown=True)
            try:
                if self._consume(response, parser, request_id):
                    return None
            except MessageTooLarge as exc:
                return exc
            if self._closed.is_set():
                return None
            if parser.last_event_id != seen:
                failures = 0  # progress: the budget counts attempts without new events
        return ConnectionClosed(f"reply stream lost; gave up after {self._attempts} reconnects: {last_error}",
                                outcome_unknown=True)

    def _fail_request(self, request_id: Any, exc: BaseException) -> None:
        if self._closed.is_set():
            return
        if self._on_request_error is not None:
            self._on_request_error(request_id, exc)
        elif self._on_message is not None:
            self._on_message({"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32000, "message": str(exc),
                "data": {"mcpsync": "transport", "outcome_unknown": True}}})

    def _ensure_listener(self) -> None:
        with self._lock:
            if self._closed.is_set() or (self._listener is not None and self._listener.is_alive()):
                return
            self._listener = None
        self._listener = self._spawn(self._listen_loop, name="get")

    def _listen_loop(self) -> None:
        parser = SSEParser(self._max)
        failures = 0
        while not self._closed.is_set():
            seen = parser.last_event_id
            try:
                response = self._get(seen or None)
            except ConnectionClosed as exc:
                log.debug("listening stream: %s", exc)
                response = None
            if response is not None:
                status = response.status_code
                if status in _NO_STREAM or status == 204 or status in (401, 403):
                    log.debug("no listening stream (GET answered %s)", status)
                    response.close()
                    return
                if not 200 <= status < 300 or not common.is_event_stream(response):
                    response.close()
                else:
                    try:
                        self._consume(response, parser, None)
                    except MessageTooLarge as exc:
                        log.warning("listening stream: %s", exc)
                    if parser.last_event_id != seen:
                        failures = 0
            failures += 1
            if failures > self._attempts:
                log.warning("listening stream lost; gave up after %d reconnects", self._attempts)
                return
            if self._closed.wait(self._delay(parser, failures)):
                return
            self.reconnects += 1

    # -- sessions -------------------------------------------------------------------------

    def _may_resend(self, message: Mapping[str, Any]) -> bool:
        method = message.get("method")
        if method is None:
            return False  # a response to a request of the dead session
        if self._session_retry == "none":
            return False
        return self._session_retry == "all" or method != "tools/call"

    def _reinitialize(self, stale: str) -> None:
        """Replace an expired session, once for all the threads that saw it expire.

        :raises SessionExpired: when there is no handshake to replay or it fails.
        """
        with self._reinit_lock:
            if self._session_id != stale:
                return  # another thread already did it
            init = self._init_message
            if init is None:
                raise SessionExpired(404, "session expired before the handshake completed")
            self._session_id = None
            internal = f"mcpsync-reinit-{self._n}-{next(self._internal_ids)}"
            replay = {**init, "id": internal}
            log.info("session expired; re-initializing with %s", common.redact_url(self.url))
            try:
                response = self._post(encode_message(replay), what="re-initialize")
                if not 200 <= response.status_code < 300:
                    error = common.status_error(response, "re-initialize was refused")
                    response.close()
                    raise SessionExpired(error.status, f"session expired and {error.message}",
                                         body_excerpt=error.body_excerpt)
                self._capture_session(response)
                if not self._read_internal_reply(response, internal):
                    raise SessionExpired(404, "session expired and the re-initialize got no reply")
                initialized = self._initialized_message or {
                    "jsonrpc": "2.0", "method": "notifications/initialized"}
                response = self._post(encode_message(initialized), what="re-initialized notification")
                response.close()
            except ConnectionClosed as exc:
                raise SessionExpired(404, f"session expired and re-initializing failed: {exc}") from exc
            self.reinitializations += 1
        if self._listen:
            self._ensure_listener()

    def _read_internal_reply(self, response: requests.Response, internal: str) -> bool:
        """Read a reply to our own request; other messages on the stream go up as usual."""
        try:
            if common.is_event_stream(response):
                parser = SSEParser(self._max)
                with self._lock:
                    self._streams.add(response)
                for chunk in common.iter_body(response):
                    for event in parser.feed(chunk):
                        if event.data.strip() and self._internal_item(json.loads(event.data), internal):
                            return True
                return False
            raw = b"".join(common.iter_body(response))
            return bool(raw.strip()) and self._internal_item(json.loads(raw), internal)
        except (ValueError, OSError) as exc:
            log.debug("re-initialize reply unreadable: %s", exc)
            return False
        finally:
            with self._lock:
                self._streams.discard(response)
            response.close()

    def _internal_item(self, payload: Any, internal: str) -> bool:
        found = False
        for item in payload if isinstance(payload, list) else [payload]:
            if isinstance(item, dict) and item.get("id") == internal and "method" not in item:
                result = item.get("result")
                if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                    self._protocol_version = result["protocolVersion"]
                found = isinstance(result, dict)
            elif self._on_message is not None:
                self._on_message(item)
        return found

    def _delete_session(self) -> None:
        if self._session_id is None:
            return
        import requests

        try:
            response = common.http_request(
                self._session, "DELETE", self.url, headers=self._headers_for(json_body=False),
                auth=self._auth, timeout=(self._delete_timeout, self._delete_timeout), follow_redirects=False)
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


_TRANSPORT_OPTIONS = frozenset({
    "connect_timeout", "read_timeout", "max_message_bytes", "follow_redirects", "reconnect_attempts",
    "retry_delay", "max_retry_delay", "delete_timeout", "session_retry", "listen", "endpoint_timeout",
    "allow_cross_origin_endpoint",
})
_LEGACY_ONLY = frozenset({"endpoint_timeout", "allow_cross_origin_endpoint"})
_STREAMABLE_ONLY = frozenset({"reconnect_attempts", "retry_delay", "max_retry_delay", "delete_timeout",
                              "session_retry", "listen"})


def http_transport_factory(
    url: str,
    *,
    auth: Any,
    headers: Mapping[str, str] | None,
    session: Any,
    transport: str,
    options: dict[str, Any],
) -> tuple[Callable[[], Transport], dict[str, Any]]:
    """Split transport options from client options; return a transport factory.

    Each call of the factory makes a fresh transport (a fresh connection pool,
    unless a session was given): :class:`~mcpsync.Client` calls it again in a
    forked child.  A given ``requests.Session`` is shared, so after a fork its
    pools are cleared in the child (closing, never shutting down, the parent's
    sockets).
    """
    import os

    from .legacy_sse import AutoHTTPTransport, LegacySSETransport

    if transport not in ("auto", "streamable-http", "sse"):
        raise ValueError("transport must be 'auto', 'streamable-http' or 'sse'")
    transport_options = {k: v for k, v in options.items() if k in _TRANSPORT_OPTIONS}
    client_options = {k: v for k, v in options.items() if k not in _TRANSPORT_OPTIONS}
    common.origin(url)  # validate early
    owner = os.getpid()

    def factory() -> Transport:
        if session is not None and os.getpid() != owner:
            for adapter in session.adapters.values():
                pool = getattr(adapter, "poolmanager", None)
                if pool is not None:
                    pool.clear()
        base = {"auth": auth, "headers": headers, "session": session}
        if transport == "sse":
            opts = {k: v for k, v in transport_options.items() if k not in _STREAMABLE_ONLY}
            return LegacySSETransport(url, **base, **opts)
        if transport == "streamable-http":
            opts = {k: v for k, v in transport_options.items() if k not in _LEGACY_ONLY}
            return StreamableHTTPTransport(url, **base, **opts)
        return AutoHTTPTransport(url, **base, **transport_options)

    return factory, client_options
