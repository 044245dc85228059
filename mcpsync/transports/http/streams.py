"""SSE streams of the Streamable HTTP transport: reader threads, resumption, the GET stream.

:class:`StreamReader` is composed by
:class:`~mcpsync.transports.http.streamable.StreamableHTTPTransport`: it owns the
open streams (shut down by :meth:`StreamReader.shutdown_all` when the
transport closes), the listening GET stream and the reconnect count, and gets
what it needs from the transport as values and callables (how to ``GET``, how
to deliver a message, how to fail one request).  Each stream is read on a named
daemon thread of the transport's :class:`~.workers.Workers`.

A POST reply stream that ends before its reply is resumed with ``GET`` +
``Last-Event-ID`` (handshake era only) within a bounded budget; otherwise the
request fails with ``outcome_unknown``.  A stream in the non-standard
"result fragment" dialect (``event: result`` … ``event: complete``) fails its
request at once with :class:`~mcpsync.exceptions.ProtocolError` and is never
resumed (see ``docs/websocket.rst``, *SSE "result fragment" streams*).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import ConnectionClosed, McpError, MessageTooLarge, ProtocolError
from mcpsync.transports.http import common as common
from mcpsync.transports.http.sse_messages import event_messages
from mcpsync.transports.http.sse_parser import SSEParser
from mcpsync.transports.http.workers import Workers

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["ReplyState", "StreamReader"]

log = logging.getLogger("mcpsync.transports.http.streamable")

_NO_STREAM = frozenset({400, 404, 405})
#: Floor under a server's ``retry`` (RELIABILITY C4): ``retry: 0`` and one event per stream
#: would otherwise reconnect in a tight loop.
_MIN_RETRY = 0.1
#: Event types that end a fragment-dialect stream.
_DIALECT_END = frozenset({"complete", "error"})


def _dialect_error(types: set[str]) -> ProtocolError:
    names = "/".join(f"'{name}'" for name in sorted(types | {"result", "complete"}))
    return ProtocolError(
        f"the server streamed the result as non-standard SSE {names} events instead of a JSON-RPC"
        " response; mcpsync does not reassemble them (see docs/websocket.rst, 'SSE result fragment"
        " streams')")


class Dialect(Exception):
    """Internal: a fragment-dialect end marker arrived before the reply."""


class ReplyState:
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
        #: A MessageTooLarge or Dialect raised while reading.
        self.error: Exception | None = None


class StreamReader:
    """Reads the transport's SSE streams; resumes lost reply streams; runs the GET stream.

    :param max_bytes: cap on one SSE event.
    :param attempts: reconnects of one stream without progress before giving up.
    :param retry_delay: seconds before the first reconnect when the server sent no ``retry``.
    :param max_retry_delay: cap on any reconnect delay.
    :param connect_timeout: the transport's connect timeout (bounds the wait for the GET).
    :param closed: set when the transport closes.
    :param workers: the transport's threads.
    :param get: opens a GET stream (with ``Last-Event-ID`` when given a non-empty id);
        raises :class:`~mcpsync.exceptions.ConnectionClosed`.
    :param deliver: passes one message up.
    :param fail: fails one request (its reply is lost).
    :param is_cancelled: whether a 2026-07-28 request was cancelled by closing its stream.
    :param untrack: forgets a 2026-07-28 request's open response.
    """

    def __init__(
        self,
        *,
        max_bytes: int,
        attempts: int,
        retry_delay: float,
        max_retry_delay: float,
        connect_timeout: float,
        closed: threading.Event,
        workers: Workers,
        get: Callable[[str | None], requests.Response],
        deliver: Callable[[Any], None],
        fail: Callable[[Any, BaseException], None],
        is_cancelled: Callable[[Any], bool],
        untrack: Callable[[Any], None],
    ) -> None:
        self._max = max_bytes
        self._attempts = attempts
        self._retry_delay = retry_delay
        self._max_retry_delay = max_retry_delay
        self._connect_timeout = connect_timeout
        self._closed = closed
        self._workers = workers
        self._get = get
        self._deliver = deliver
        self._fail_request = fail
        self._stream_cancelled = is_cancelled
        self._untrack = untrack
        self._lock = threading.Lock()
        self._streams: set[requests.Response] = set()
        self._listener: threading.Thread | None = None
        #: Set once the GET of :meth:`ensure_listener` was answered (or failed, or we closed).
        self._answered: threading.Event | None = None
        #: Requests whose reply stream is being resumed, with what stops it (:meth:`give_up`).
        self._resuming: dict[Any, threading.Event] = {}
        #: Reconnections of SSE streams (resumptions and listening stream).
        self.reconnects = 0

    # -- open streams ----------------------------------------------------------------------

    def register(self, response: requests.Response) -> bool:
        """Keep *response* to shut it down on close; ``False`` (and closed) if closed already."""
        with self._lock:
            if self._closed.is_set():
                response.close()
                return False
            self._streams.add(response)
            return True

    def unregister(self, response: requests.Response) -> None:
        with self._lock:
            self._streams.discard(response)

    def shutdown_all(self) -> None:
        """Unblock every reader (the transport is closing: :attr:`closed` is set)."""
        with self._lock:
            streams = list(self._streams)
            answered = self._answered
            resuming = list(self._resuming.values())
        if answered is not None:  # the caller waiting for the GET returns at once
            answered.set()
        for stop in resuming:
            stop.set()
        for response in streams:
            common.shutdown_response(response)

    # -- reading ---------------------------------------------------------------------------

    def take(self, chunk: bytes, parser: SSEParser, wanted: Any, odd: set[str] | None, got: bool) -> bool:
        """Parse *chunk*, delivering its messages; whether *wanted*'s reply has passed.

        :raises Dialect: when *odd* is given and a fragment-dialect end marker
            arrives before the reply.
        """
        for event in parser.feed(chunk):
            if event.event != "message":
                if odd is not None:
                    odd.add(event.event)
                    if event.event in _DIALECT_END and not got:
                        raise Dialect()
                continue
            for item in event_messages(event):
                self._deliver(item)
                if not got and wanted is not None and isinstance(item, dict) and "method" not in item \
                        and item.get("id") == wanted:
                    got = True
        return got

    def consume(self, response: requests.Response, parser: SSEParser, wanted: Any, *,
                 stop_at_reply: bool = True, odd: set[str] | None = None, got: bool = False) -> bool:
        """Read one SSE response, delivering its messages; whether *wanted*'s reply passed.

        With *stop_at_reply* false the stream is read to its end even after the
        reply, so that its connection goes back to the pool.  Event types other
        than ``message`` are collected in *odd*.

        :raises Dialect: when *odd* is given and a fragment-dialect end
            marker arrives before the reply.
        """
        if not self.register(response):
            return got
        try:
            for chunk in common.iter_body(response):
                got = self.take(chunk, parser, wanted, odd, got)
                if got and stop_at_reply:
                    return True
        except MessageTooLarge:
            if got:
                return True
            raise
        except Dialect:
            raise
        except Exception as exc:  # noqa: BLE001 - any read failure ends this stream alike
            if not self._closed.is_set():
                log.debug("SSE stream broke: %s", common.redact_text(str(exc)))
        finally:
            self.unregister(response)
            response.close()
        return got

    def finish_in_thread(self, response: requests.Response, request_id: Any, resumable: bool,
                         state: ReplyState) -> None:
        """Go on reading a POST reply stream on a reader thread, from where *state* left off."""
        self._workers.spawn(self._read_reply_stream, response, request_id, resumable, state, name="sse")

    def _read_reply_stream(self, response: requests.Response, request_id: Any, resumable: bool,
                           state: ReplyState) -> None:
        try:
            self.read_post_stream(response, request_id, resumable, state)
        finally:
            if not resumable:
                self._untrack(request_id)

    def read_post_stream(self, response: requests.Response, request_id: Any, resumable: bool,
                          state: ReplyState | None = None) -> None:
        """Finish a POST reply stream (from where *state* left off), resuming or failing its request."""
        if state is None:
            state = ReplyState(SSEParser(self._max, typed_without_data=True))
        parser, odd = state.parser, state.odd
        try:
            if isinstance(state.error, Dialect):
                raise state.error
            if isinstance(state.error, MessageTooLarge):
                if not state.got:
                    raise state.error
                got = True
            elif state.ended:
                got = state.got
            else:
                got = self.consume(response, parser, request_id, stop_at_reply=False, odd=odd, got=state.got)
            if got:
                return
        except MessageTooLarge as exc:
            self._fail_request(request_id, exc)
            return
        except Dialect:
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
        """Seconds before reconnect number *failures* (1 = the first since progress).

        The server's ``retry`` (at least :data:`_MIN_RETRY`) is the floor and the base of the
        backoff; without one, ``retry_delay`` is.  Later attempts back off exponentially with
        full jitter above that floor; nothing waits longer than ``max_retry_delay``.
        """
        base = max(parser.retry / 1000.0, _MIN_RETRY) if parser.retry is not None else self._retry_delay
        base = min(base, self._max_retry_delay)
        return max(base, random.uniform(0, min(self._max_retry_delay, base * 2 ** (failures - 1))))

    def give_up(self, request_id: Any) -> None:
        """Nobody waits for *request_id* any more (timeout, cancel): stop resuming its stream."""
        with self._lock:
            stop = self._resuming.get(request_id)
        if stop is not None:
            stop.set()

    def _resume(self, parser: SSEParser, request_id: Any) -> McpError | None:
        """Resume a POST stream with GET + Last-Event-ID; ``None`` once the reply arrived.

        At most ``attempts`` reconnects in a row that bring no progress (a new event id or a
        message); progress starts the count again, and the reconnects go on only while the
        request is waited for (:meth:`give_up`) and the transport is open.
        """
        stop = threading.Event()
        with self._lock:
            if self._closed.is_set():  # shutdown_all() has run: it would not stop this one
                return None
            self._resuming[request_id] = stop
        try:
            failures = 0
            while failures < self._attempts:
                failures += 1
                if stop.wait(self._delay(parser, failures)) or self._closed.is_set():
                    return None
                self.reconnects += 1
                mark = parser.last_event_id, parser.messages
                try:
                    response = self._get(mark[0])
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
                    if self.consume(response, parser, request_id):
                        return None
                except MessageTooLarge as exc:
                    return exc
                if (parser.last_event_id, parser.messages) != mark:
                    failures = 0  # progress: the budget counts attempts without it
        finally:
            with self._lock:
                self._resuming.pop(request_id, None)
        return ConnectionClosed(f"reply stream lost; gave up after {self._attempts} reconnects without"
                                " progress", outcome_unknown=True)

    # -- the GET listening stream (handshake era) ------------------------------------------

    def ensure_listener(self, deadline: float | None = None) -> None:
        """Start the GET stream and wait (bounded) until the server answered the GET.

        Waiting means the stream is open before the handshake returns: a
        notification the server sends right after it is not missed, and the
        GET never races the first requests (a server may take a GET that
        arrives mid-call for the reconnection of that call's stream).

        :param deadline: the current call's: the wait ends by it (the GET goes on
            in its thread), and at once when the transport closes.
        """
        answered = threading.Event()
        with self._lock:
            if self._closed.is_set() or (self._listener is not None and self._listener.is_alive()):
                return
            self._listener = None
            # Published before the GET starts: shutdown_all() (close) sets it from now on.
            self._answered = answered
        self._listener = self._workers.spawn(self._listen_loop, answered, name="get")
        wait = min(self._connect_timeout, 5.0)
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - time.monotonic()))
        answered.wait(wait)

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
                    messages = parser.messages
                    try:
                        self.consume(response, parser, None)
                    except MessageTooLarge as exc:
                        log.warning("listening stream: %s", exc)
                    if parser.last_event_id != seen or parser.messages != messages:
                        failures = 0  # progress
            failures += 1
            if failures > self._attempts:
                log.warning("listening stream lost; gave up after %d reconnects", self._attempts)
                return
            if self._closed.wait(self._delay(parser, failures)):
                return
            self.reconnects += 1
