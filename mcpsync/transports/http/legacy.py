"""The legacy HTTP+SSE transport (MCP 2024-11-05).

``GET`` the SSE URL; the server's first event, ``endpoint``, names the URL to POST
messages to (it must have the stream's origin, or our headers and credentials would
go elsewhere); every reply arrives on the GET stream, read by the thread
``mcpsync-http-sse-N``.  The stream is opened by the first :meth:`send` (the era
probe or ``initialize``), within that call's deadline.  A lost stream cannot be
resumed in 2024-11-05: every pending request fails with ``outcome_unknown``.

The ``"auto"`` transport that falls back to this one is in :mod:`.auto`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from mcpsync.exceptions import ClientClosed, ConnectionClosed, MessageTooLarge, RequestTimeout, ServerStartError
from mcpsync.rpc.deadline import Deadline
from mcpsync.transports.base import encode_message
from mcpsync.transports.http import interrupt, wire
from mcpsync.transports.http.base import HttpTransport
from mcpsync.transports.http.sse_parser import SSEEvent, SSEParser
from mcpsync.transports.http.streams import pump

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["LegacySSETransport"]

log = logging.getLogger(__name__)


class LegacySSETransport(HttpTransport):
    """MCP over the 2024-11-05 HTTP+SSE transport.

    Takes the parameters of :class:`~.base.HttpTransport` (*url* is the SSE endpoint,
    ``GET``, e.g. ``http://host/sse``) and:

    :param endpoint_timeout: seconds to wait for the ``endpoint`` event.
    :param allow_cross_origin_endpoint: accept an ``endpoint`` on another origin (off:
        a hostile server could make us POST our headers elsewhere).
    """

    def __init__(self, url: str, *, endpoint_timeout: float = 10.0, allow_cross_origin_endpoint: bool = False,
                 **options: Any) -> None:
        super().__init__(url, **options)
        self._endpoint_timeout = endpoint_timeout
        self._cross_origin = allow_cross_origin_endpoint
        self._open_lock = threading.Lock()
        self._endpoint_ready = threading.Event()
        self.endpoint: str | None = None
        self._endpoint_error: BaseException | None = None
        self._stream: requests.Response | None = None

    def describe(self) -> str:
        return f"HTTP+SSE {wire.redact_url(self.url)}"

    def _open_stream(self, deadline: Deadline | None) -> None:
        """Open the SSE stream and wait (bounded) for the ``endpoint`` event.

        :raises ServerStartError: when the stream cannot be opened or names no acceptable
            endpoint in time.
        :raises RequestTimeout: when *deadline* passed first.
        :raises HTTPStatusError: when the server refuses the GET.
        """
        headers = {**self._headers, "Accept": "text/event-stream"}
        what = f"GET {wire.redact_url(self.url)}"
        try:
            with self._registered(object()):
                response = self._request("GET", self.url, headers=headers, what=what, deadline=deadline)
        except ConnectionClosed as exc:
            if isinstance(exc, ClientClosed):
                raise
            raise ServerStartError(str(exc)) from exc.__cause__
        if not 200 <= response.status_code < 300 or not wire.is_event_stream(response):
            error = wire.status_error(response, "the SSE stream was refused")
            response.close()
            if 200 <= response.status_code < 300:
                raise ServerStartError(f"{self.describe()} did not answer with an event stream")
            raise error
        self._stream = response  # close() shuts it down from here on
        try:
            self._spawn(self._read, response, name="sse")  # close() joins it
        except ClientClosed:
            response.close()
            raise
        wait = self._endpoint_timeout
        if not self._endpoint_ready.wait(wait if deadline is None else deadline.remaining(wait)):
            if deadline is not None and deadline.passed():
                raise RequestTimeout(f"{self.describe()} sent no endpoint event by the call's deadline")
            raise ServerStartError(f"{self.describe()} sent no endpoint event within {self._endpoint_timeout} s")
        self._check_open()
        if self._endpoint_error is not None:
            raise ServerStartError(str(self._endpoint_error)) from self._endpoint_error

    def _drop_stream(self) -> None:
        stream = self._stream
        if stream is not None:
            # Not close(): closing a streaming response from another thread can deadlock on the
            # reader's buffer lock; shut down, the blocked read returns and the reader closes it.
            interrupt.shutdown(interrupt.socket_of(stream))

    def _read(self, response: requests.Response) -> None:
        parser = SSEParser(self._max)
        reason: ConnectionClosed = ConnectionClosed("the server closed the SSE stream", outcome_unknown=True)
        try:
            pump(response, parser, self._on_message, other=self._endpoint_event)
        except MessageTooLarge as exc:
            reason = exc
        except BaseException as exc:  # (once closed, the reason is that)
            reason = wire.connection_error(exc, "the SSE stream broke", outcome_unknown=True)
        finally:
            response.close()
            self._endpoint_ready.set()
        if self._closed.is_set():
            reason = ClientClosed("transport closed")
        if self.endpoint is not None or self._closed.is_set():  # else the opening send raises why
            self._report_close(reason)

    def _endpoint_event(self, event: SSEEvent) -> None:
        if event.event != "endpoint" or self._endpoint_ready.is_set():
            return
        target = urljoin(self.url, event.data.strip())
        if wire.origin(target) != wire.origin(self.url) and not self._cross_origin:
            self._endpoint_error = ServerStartError(
                f"endpoint event names another origin ({wire.redact_url(target)}); refusing to send messages there")
        else:
            self.endpoint = target
        self._endpoint_ready.set()

    def send(self, message: Mapping[str, Any], deadline: Deadline | None = None) -> None:
        """POST one message to the endpoint (answered ``202``); replies come on the stream.

        The first send opens the stream.

        :raises HTTPStatusError: for a non-success status.
        :raises RequestTimeout: when *deadline* passed first.
        :raises ConnectionClosed: when the server cannot be reached.
        """
        body = encode_message(message)
        self._check_open()
        if self.endpoint is None:
            with self._open_lock:
                if self.endpoint is None:
                    try:
                        self._open_stream(deadline)
                    except BaseException:
                        self._drop_stream()  # this send fails; the connection is not open yet
                        raise
        assert self.endpoint is not None
        self._post(self.endpoint, {**self._headers, "Content-Type": "application/json"},
                   message.get("method") or "response", deadline, body)

    _interrupt_streams = _drop_stream
