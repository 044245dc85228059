"""The legacy HTTP+SSE transport (MCP 2024-11-05).

Legacy: ``GET`` the SSE URL; the server's first event, ``endpoint``, names the
URL to POST messages to (it must have the stream's origin, or our headers and
credentials would go elsewhere); every reply arrives on the GET stream, read
by the thread ``mcpsync-http-sse-N``.  A lost stream cannot be resumed in
2024-11-05: every pending request fails with ``outcome_unknown``.

The ``"auto"`` transport that falls back to this one is in :mod:`.auto`.

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from mcpsync.exceptions import (
    ClientClosed,
    ConnectionClosed,
    MessageTooLarge,
    RequestTimeout,
    ServerStartError,
)
from mcpsync.transports.http import common as common
from mcpsync.transports.http import track as track
from mcpsync.transports.http.endpoint import HttpEndpoint
from mcpsync.transports.http.sse_messages import event_messages
from mcpsync.transports.http.sse_parser import SSEParser
from mcpsync.transports.http.workers import Workers
from mcpsync.transports.base import CloseHandler, MessageHandler, RequestErrorHandler, WriteErrorHandler, encode_message

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["LegacySSETransport"]

log = logging.getLogger("mcpsync.transports.http.streamable")

_ids = itertools.count(1)


class LegacySSETransport(HttpEndpoint):
    """MCP over the 2024-11-05 HTTP+SSE transport.

    :param url: the SSE endpoint (``GET``), e.g. ``http://host/sse``.
    :param endpoint_timeout: seconds to wait for the ``endpoint`` event.
    :param allow_cross_origin_endpoint: accept an ``endpoint`` on another
        origin (off: a hostile server could make us POST our headers elsewhere).

    The other parameters are those of :class:`~mcpsync.transports.http.streamable.StreamableHTTPTransport`.
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
        endpoint_timeout: float = 10.0,
        allow_cross_origin_endpoint: bool = False,
    ) -> None:
        self._init_endpoint(
            url, auth=auth, headers=headers, session=session, connect_timeout=connect_timeout,
            read_timeout=read_timeout, max_message_bytes=max_message_bytes, follow_redirects=follow_redirects,
        )
        self._endpoint_timeout = endpoint_timeout
        self._cross_origin = allow_cross_origin_endpoint
        self._n = next(_ids)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._endpoint_ready = threading.Event()
        self._close_reported = False
        self.endpoint: str | None = None
        self._endpoint_error: BaseException | None = None
        self._stream: requests.Response | None = None
        self._reader: threading.Thread | None = None
        self._on_message: MessageHandler | None = None
        self._on_close: CloseHandler | None = None
        self._on_request_error: RequestErrorHandler | None = None
        #: Requests waiting for their response headers, abortable by :meth:`close`.
        self._exchanges: set[track.Exchange] = set()
        #: The threads of ``request_async`` POSTs (joined, bounded, by :meth:`close`).
        self._workers = Workers(self._n)

    def describe(self) -> str:
        return f"HTTP+SSE {common.redact_url(self.url)}"

    @contextlib.contextmanager
    def _abortable(self) -> Iterator[track.Exchange]:
        """Make this thread's next request abortable by :meth:`close` (headers and connect included)."""
        exchange = track.Exchange()
        with self._lock:
            if self._closed.is_set():
                raise ClientClosed("transport is closed")
            self._exchanges.add(exchange)
        track.begin(exchange)
        try:
            yield exchange
        finally:
            track.end()
            with self._lock:
                self._exchanges.discard(exchange)

    def start(self, on_message: MessageHandler, on_close: CloseHandler,
              on_request_error: RequestErrorHandler | None = None, *, deadline: float | None = None) -> None:
        """Open the SSE stream and wait (bounded) for the ``endpoint`` event.

        :param on_request_error: fails one pending request (a detached POST that failed).
        :param deadline: ``time.monotonic()`` value by which the stream must be
            open and its endpoint known (the connecting call's deadline);
            :meth:`close` from another thread ends the wait too.

        :raises ServerStartError: when the stream cannot be opened or names no
            acceptable endpoint in time.
        :raises RequestTimeout: when *deadline* passed first.
        :raises HTTPStatusError: when the server refuses the GET.
        """
        self._on_message = on_message
        self._on_close = on_close
        self._on_request_error = on_request_error
        try:
            self._open_stream(deadline)
        except BaseException:
            self.close()
            raise

    def _open_stream(self, deadline: float | None) -> None:
        import requests

        headers = dict(self._headers)
        headers["Accept"] = "text/event-stream"
        what = f"GET {common.redact_url(self.url)}"
        try:
            with self._abortable():
                response = common.http_request(self._sender, "GET", self.url, headers=headers,
                                               timeout=self._bounded(deadline, what), follow_redirects=self._follow,
                                               deadline=deadline)
        except requests.RequestException as exc:
            if self._closed.is_set():
                raise ClientClosed("transport is closed") from common.sanitized(exc)
            if deadline is not None and time.monotonic() >= deadline - 0.01:
                raise RequestTimeout(f"{what}: no answer by the call's deadline") from common.sanitized(exc)
            raise ServerStartError(str(common.connection_error(exc, f"{what} failed"))) \
                from common.sanitized(exc)
        if not 200 <= response.status_code < 300 or not common.is_event_stream(response):
            error = common.status_error(response, "the SSE stream was refused")
            response.close()
            if 200 <= response.status_code < 300:
                raise ServerStartError(f"{self.describe()} did not answer with an event stream")
            raise error
        with self._lock:
            if self._closed.is_set():
                response.close()
                raise ClientClosed("transport is closed")
            self._stream = response
        self._reader = threading.Thread(target=self._read, args=(response,), daemon=True,
                                        name=f"mcpsync-http-sse-{self._n}")
        self._reader.start()
        wait = self._endpoint_timeout
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - time.monotonic()))
        if not self._endpoint_ready.wait(wait):
            if wait < self._endpoint_timeout:
                raise RequestTimeout(f"{self.describe()} sent no endpoint event by the call's deadline")
            raise ServerStartError(f"{self.describe()} sent no endpoint event within {self._endpoint_timeout} s")
        if self._closed.is_set():
            raise ClientClosed("transport is closed")
        if self._endpoint_error is not None:
            raise ServerStartError(str(self._endpoint_error)) from self._endpoint_error

    def _set_endpoint(self, data: str) -> None:
        target = urljoin(self.url, data.strip())
        if common.origin(target) != common.origin(self.url) and not self._cross_origin:
            self._endpoint_error = ServerStartError(
                f"endpoint event names another origin ({common.redact_url(target)});"
                " refusing to send messages there")
        else:
            self.endpoint = target
        self._endpoint_ready.set()

    def _read(self, response: requests.Response) -> None:
        parser = SSEParser(self._max)
        reason: ConnectionClosed = ConnectionClosed("the server closed the SSE stream", outcome_unknown=True)
        try:
            for chunk in common.iter_body(response):
                for event in parser.feed(chunk):
                    if event.event == "endpoint":
                        if not self._endpoint_ready.is_set():
                            self._set_endpoint(event.data)
                        continue
                    for item in event_messages(event):
                        if self._on_message is not None:
                            self._on_message(item)
        except MessageTooLarge as exc:
            reason = exc
        except BaseException as exc:
            if not self._closed.is_set():
                reason = common.connection_error(exc, "the SSE stream broke", outcome_unknown=True)
        finally:
            response.close()
            self._endpoint_ready.set()
        if self._closed.is_set():
            reason = ClientClosed("transport closed")
        self._report_close(reason)

    def send(
        self,
        message: Mapping[str, Any],
        *,
        deadline: float | None = None,
        detach: bool = False,
        on_write_error: WriteErrorHandler | None = None,
    ) -> None:
        """POST one message to the endpoint; replies come on the stream.

        The POST (answered ``202`` at once by a well-behaved server) is bounded
        by *deadline*; with *detach* it runs on a short-lived thread and a
        failure reaches the request's caller through its reply.

        :raises HTTPStatusError: for a non-success status.
        :raises RequestTimeout: when *deadline* passed first.
        :raises ConnectionClosed: when the server cannot be reached.
        """
        body = encode_message(message)
        if self._closed.is_set() or self.endpoint is None:
            raise ClientClosed("transport is closed")
        request_id = message.get("id") if "method" in message else None
        if detach and isinstance(request_id, (int, str)) and self._on_request_error is not None:
            fail = self._on_request_error

            def post() -> None:
                try:
                    self._post_message(message, body, deadline)
                except BaseException as exc:  # handed to the request's caller
                    if not self._closed.is_set():
                        fail(request_id, exc)

            with self._lock:  # spawned under the check: close() joins every POST thread
                if self._closed.is_set():
                    raise ClientClosed("transport is closed")
                self._workers.spawn(post, name="post")  # mcpsync-http-post-N.M
            return
        self._post_message(message, body, deadline)

    def _post_message(self, message: Mapping[str, Any], body: bytes, deadline: float | None) -> None:
        import requests

        assert self.endpoint is not None
        headers = dict(self._headers)
        headers["Content-Type"] = "application/json"
        method = message.get("method")
        timeout = self._bounded(deadline, f"POST {method or 'response'}")
        try:
            with self._abortable():
                response = common.http_request(self._sender, "POST", self.endpoint, headers=headers,
                                               timeout=timeout, data=body, follow_redirects=self._follow,
                                               deadline=deadline)
        except requests.RequestException as exc:
            if self._closed.is_set():
                raise ClientClosed("transport is closed") from common.sanitized(exc)
            if deadline is not None and time.monotonic() >= deadline - 0.01 and isinstance(exc, requests.Timeout):
                raise RequestTimeout(f"POST {method} to the message endpoint got no answer by its deadline",
                                     method=method if isinstance(method, str) else "") from common.sanitized(exc)
            raise common.connection_error(exc, "POST to the message endpoint failed", outcome_unknown=not common.never_connected(exc)) from common.sanitized(exc)
        if not 200 <= response.status_code < 300:
            try:
                raise common.status_error(response, f"{message.get('method') or 'response'} was refused")
            finally:
                response.close()
        common.release(response)

    def close(self) -> None:
        """Shut the stream and every request in flight down, join their threads; idempotent and bounded."""
        with self._lock:
            first = not self._closed.is_set()
            self._closed.set()
            exchanges = list(self._exchanges)
            reader = self._reader
        for exchange in exchanges:
            exchange.abort()
        if self._stream is not None:
            common.shutdown_response(self._stream)
        if first:
            until = time.monotonic() + 2.0  # one budget for all: close() stays bounded
            # ident is None: created but not started yet (a connect close() interrupted).
            if reader is not None and reader is not threading.current_thread() and reader.ident is not None:
                reader.join(timeout=max(0.0, until - time.monotonic()))
            self._workers.join(max(0.0, until - time.monotonic()))
            if self._own_session:
                self._session.close()
        self._report_close(ClientClosed("transport closed"))

    def _report_close(self, exc: BaseException) -> None:
        with self._lock:
            if self._close_reported:
                return
            self._close_reported = True
        if self._on_close is not None:
            self._on_close(exc)
