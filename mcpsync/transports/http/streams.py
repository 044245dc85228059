"""SSE streams of the Streamable HTTP transport: reader threads, resumption, the GET stream.

Part of :class:`~mcpsync.transports.http.streamable.StreamableHTTPTransport`, kept apart
for size.  Each stream has its own named daemon thread; :meth:`close` of the
transport shuts their sockets down and joins them.

A POST reply stream that ends before its reply is resumed with ``GET`` +
``Last-Event-ID`` (handshake era only) within a bounded budget; otherwise the
request fails with ``outcome_unknown``.  A stream in the non-standard
"result fragment" dialect (``event: result`` … ``event: complete``) fails its
request at once with :class:`~mcpsync.exceptions.ProtocolError` and is never
resumed (see ``docs/websocket.rst``, *SSE "result fragment" streams*).
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import ConnectionClosed, McpError, MessageTooLarge, ProtocolError
from mcpsync.transports.http import common as common
from mcpsync.transports.http.sse_parser import SSEParser

if TYPE_CHECKING:  # pragma: no cover
    import requests

    from mcpsync.transports.http.fast_send import Sender

__all__ = ["StreamsMixin"]

log = logging.getLogger("mcpsync.transports.http.streamable")

_NO_STREAM = frozenset({400, 404, 405})
_CHUNK = 65536
#: Longest wait for the next segment of a reply stream in the caller's thread.
_INLINE_WAIT = 0.002
#: Longest time the caller's thread spends reading a reply stream in all.
_INLINE_BUDGET = 0.02
#: Event types that end a fragment-dialect stream.
_DIALECT_END = frozenset({"complete", "error"})


def _dialect_error(types: set[str]) -> ProtocolError:
    names = "/".join(f"'{name}'" for name in sorted(types | {"result", "complete"}))
    return ProtocolError(
        f"the server streamed the result as non-standard SSE {names} events instead of a JSON-RPC"
        " response; mcpsync does not reassemble them (see docs/websocket.rst, 'SSE result fragment"
        " streams')")


class _Dialect(Exception):
    """Internal: a fragment-dialect end marker arrived before the reply."""


class _ReplyState:
    """How far a POST reply stream was read, handed from the caller's thread to a reader thread."""

    __slots__ = ("ended", "error", "got", "odd", "parser")

    def __init__(self, parser: SSEParser) -> None:
        self.parser = parser
        #: Event types other than ``message`` seen so far (fragment dialect).
        self.odd: set[str] = set()
        #: Whether the reply has been delivered.
        self.got = False
        #: Whether the body was read to its end (or broke).
        self.ended = False
        #: A MessageTooLarge or _Dialect raised while reading.
        self.error: Exception | None = None


class StreamsMixin:
    """Reader threads and stream recovery; the transport supplies the attributes below."""

    url: str
    reconnects: int
    _sender: Sender
    _session: requests.Session
    _timeout: tuple[float, float]
    _follow: bool
    _max: int
    _attempts: int
    _retry_delay: float
    _max_retry_delay: float
    _n: int
    _lock: threading.Lock
    _closed: threading.Event
    _streams: set[requests.Response]
    _threads: set[threading.Thread]
    _thread_ids: itertools.count[int]
    _listener: threading.Thread | None

    def _headers_for(self, *, accept: str = "", json_body: bool = True) -> dict[str, str]:
        raise NotImplementedError

    def _deliver(self, item: Any) -> None:
        raise NotImplementedError

    def _fail_request(self, request_id: Any, exc: BaseException) -> None:
        raise NotImplementedError

    def _stream_cancelled(self, request_id: Any) -> bool:
        raise NotImplementedError

    def _untrack(self, request_id: Any, *, forget: bool = False) -> None:
        raise NotImplementedError

    # -- threads ---------------------------------------------------------------------------

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

    # -- reading ---------------------------------------------------------------------------

    def _take(self, chunk: bytes, parser: SSEParser, wanted: Any, odd: set[str] | None, got: bool) -> bool:
        """Parse *chunk*, delivering its messages; whether *wanted*'s reply has passed.

        :raises _Dialect: when *odd* is given and a fragment-dialect end marker
            arrives before the reply.
        """
        for event in parser.feed(chunk):
            if event.event != "message":
                if odd is not None:
                    odd.add(event.event)
                    if event.event in _DIALECT_END and not got:
                        raise _Dialect()
                continue
            if not event.data.strip():
                continue
            try:
                payload = json.loads(event.data)
            except ValueError:
                log.warning("ignoring an SSE event that is not JSON")
                continue
            for item in payload if isinstance(payload, list) else [payload]:
                self._deliver(item)
                if not got and wanted is not None and isinstance(item, dict) and "method" not in item \
                        and item.get("id") == wanted:
                    got = True
        return got

    def _consume(self, response: requests.Response, parser: SSEParser, wanted: Any, *,
                 stop_at_reply: bool = True, odd: set[str] | None = None, got: bool = False) -> bool:
        """Read one SSE response, delivering its messages; whether *wanted*'s reply passed.

        With *stop_at_reply* false the stream is read to its end even after the
        reply, so that its connection goes back to the pool.  Event types other
        than ``message`` are collected in *odd*.

        :raises _Dialect: when *odd* is given and a fragment-dialect end
            marker arrives before the reply.
        """
        with self._lock:
            if self._closed.is_set():
                response.close()
                return got
            self._streams.add(response)
        try:
            for chunk in common.iter_body(response):
                got = self._take(chunk, parser, wanted, odd, got)
                if got and stop_at_reply:
                    return True
        except MessageTooLarge:
            if got:
                return True
            raise
        except _Dialect:
            raise
        except Exception as exc:  # noqa: BLE001 - any read failure ends this stream alike
            if not self._closed.is_set():
                log.debug("SSE stream broke: %s", common.redact_text(str(exc)))
        finally:
            with self._lock:
                self._streams.discard(response)
            response.close()
        return got

    def _read_reply_inline(self, response: requests.Response, request_id: Any, resumable: bool) -> bool:
        """Read a POST reply stream in the caller's thread while its bytes come promptly.

        Waits at most :data:`_INLINE_WAIT` for each next segment and
        :data:`_INLINE_BUDGET` in all, so :meth:`send` stays short: the usual
        quick reply (headers, event and end of stream within a few segments)
        costs no thread switch, and its messages are delivered in order as
        they are read.  Anything else (a slow reply, a stream that stays open,
        a failure) goes on in a reader thread from where this left off.

        :returns: whether the stream was read to its end with the reply in it
            (else a reader thread now owns *response*).
        """
        state = _ReplyState(SSEParser(self._max, typed_without_data=True))
        read1 = getattr(response.raw, "read1", None)
        deadline = time.monotonic() + _INLINE_BUDGET
        try:
            while read1 is not None and time.monotonic() < deadline \
                    and common.readable_soon(response, _INLINE_WAIT):
                chunk = read1(_CHUNK)
                if not chunk:
                    state.ended = True
                    break
                state.got = self._take(chunk, state.parser, request_id, state.odd, state.got)
        except (MessageTooLarge, _Dialect) as exc:
            state.error = exc
        except Exception as exc:  # noqa: BLE001 - the reader thread reports the broken stream
            log.debug("SSE stream broke: %s", common.redact_text(str(exc)))
            state.ended = True
        if state.ended and state.got:
            response.close()
            return True
        self._spawn(self._read_reply_stream, response, request_id, resumable, state, name="sse")
        return False

    def _read_reply_stream(self, response: requests.Response, request_id: Any, resumable: bool,
                           state: _ReplyState) -> None:
        try:
            self._read_post_stream(response, request_id, resumable, state)
        finally:
            if not resumable:
                self._untrack(request_id)

    def _read_post_stream(self, response: requests.Response, request_id: Any, resumable: bool,
                          state: _ReplyState | None = None) -> None:
        """Finish a POST reply stream (from where *state* left off), resuming or failing its request."""
        if state is None:
            state = _ReplyState(SSEParser(self._max, typed_without_data=True))
        parser, odd = state.parser, state.odd
        try:
            if isinstance(state.error, _Dialect):
                raise state.error
            if isinstance(state.error, MessageTooLarge):
                if not state.got:
                    raise state.error
                got = True
            elif state.ended:
                got = state.got
            else:
                got = self._consume(response, parser, request_id, stop_at_reply=False, odd=odd, got=state.got)
            if got:
                return
        except MessageTooLarge as exc:
            self._fail_request(request_id, exc)
            return
        except _Dialect:
            self._fail_request(request_id, _dialect_error(odd))
            return
        finally:
            if state.error is not None or state.ended:
                response.close()
        if self._closed.is_set() or self._stream_cancelled(request_id):
            return
        if odd:
            self._fail_request(request_id, _dialect_error(odd))
            return
        if not resumable or not parser.saw_id or not parser.last_event_id:
            self._fail_request(request_id, ConnectionClosed(
                "the server closed the reply stream before the reply"
                + (" (no event id to resume from)" if resumable
                   else " (2026-07-28 streams cannot be resumed: the request is lost)"),
                outcome_unknown=True))
            return
        error = self._resume(parser, request_id)
        if error is not None:
            self._fail_request(request_id, error)

    # -- reconnecting ----------------------------------------------------------------------

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
            return common.http_request(self._sender, "GET", self.url, headers=headers,
                                       timeout=self._timeout, follow_redirects=self._follow)
        except requests.RequestException as exc:
            raise common.connection_error(exc, "GET stream failed") from common.sanitized(exc)

    def _resume(self, parser: SSEParser, request_id: Any) -> McpError | None:
        """Resume a POST stream with GET + Last-Event-ID; ``None`` once the reply arrived."""
        failures = 0
        while failures < self._attempts:
            failures += 1
            if self._closed.wait(self._delay(parser, failures)):
                return None
            self.reconnects += 1
            seen = parser.last_event_id
            try:
                response = self._get(seen)
            except ConnectionClosed as exc:
                # The server cannot even be reached: retrying would only make the caller
                # wait out its timeout (RELIABILITY C4). Fail now; the outcome is unknown.
                return ConnectionClosed(f"reply stream lost and could not be resumed: {exc}",
                                        outcome_unknown=True)
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
        return ConnectionClosed(f"reply stream lost; gave up after {self._attempts} reconnects",
                                outcome_unknown=True)

    # -- the GET listening stream (handshake era) ------------------------------------------

    def _ensure_listener(self) -> None:
        """Start the GET stream and wait (bounded) until the server answered the GET.

        Waiting means the stream is open before the handshake returns: a
        notification the server sends right after it is not missed, and the
        GET never races the first requests (a server may take a GET that
        arrives mid-call for the reconnection of that call's stream).
        """
        with self._lock:
            if self._closed.is_set() or (self._listener is not None and self._listener.is_alive()):
                return
            self._listener = None
        answered = threading.Event()
        self._listener = self._spawn(self._listen_loop, answered, name="get")
        answered.wait(min(self._timeout[0], 5.0))

    def _listen_loop(self, answered: threading.Event) -> None:
        parser = SSEParser(self._max)
        failures = 0
        while not self._closed.is_set():
            seen = parser.last_event_id
            try:
                response = self._get(seen or None)
            except ConnectionClosed as exc:
                log.debug("listening stream: %s", exc)
                response = None
            finally:
                answered.set()
            if response is not None:
                status = response.status_code
                # A 2xx that is not a stream is an SPA fallback or a JSON error page:
                # retrying it is a reconnect loop (awslabs/mcp#3352), so it means "no stream".
                if status in _NO_STREAM or status in (401, 403) or (
                        200 <= status < 300 and not common.is_event_stream(response)):
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
