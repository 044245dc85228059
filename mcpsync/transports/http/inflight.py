"""Requests in flight on the Streamable HTTP transport: abortable POSTs and 2026-07-28 streams.

:class:`InFlight` owns this state under its own lock; the transport holds one.

* every POST waiting for its reply has a :class:`~.track.Exchange`, so that
  :meth:`close` or cancelling the request can interrupt it from any thread;
* a 2026-07-28 request is remembered with its method until answered (its reply
  may teach the transport tool annotations), and its open response is kept so
  that cancelling closes it: that is the cancellation (no
  ``notifications/cancelled``).  Its reader then sees the stream end and,
  finding the request in :meth:`stream_cancelled`, fails nothing.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import ClientClosed
from mcpsync.transports.http import common as common
from mcpsync.transports.http import track as track

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["InFlight"]


class InFlight:
    """Tracking of POSTs and 2026-07-28 requests by request id; thread-safe.

    :param closed: the transport's, set before :meth:`close_all`.
    """

    def __init__(self, closed: threading.Event) -> None:
        self._closed = closed
        self._lock = threading.Lock()
        #: Methods of the 2026-07-28 requests awaiting their reply, by id.
        self._modern: dict[Any, str] = {}
        #: Their open responses (JSON being read, or SSE), so that cancelling closes them.
        self._responses: dict[Any, requests.Response] = {}
        #: Requests cancelled by closing their stream, until their reader notices.
        self._cancelled: set[Any] = set()
        #: POSTs in flight by request id, abortable from any thread (close, cancel).
        self._exchanges: dict[Any, track.Exchange] = {}

    # -- POSTs ---------------------------------------------------------------------------

    def begin(self, request_id: Any) -> track.Exchange:
        """Register the request of *request_id* (any key), made by the current thread.

        :raises ClientClosed: once the transport is closed.  Checked under the
            lock :meth:`close_all` takes: an exchange registered after it ran
            would never be aborted, and its request would go out after close().
        """
        exchange = track.Exchange()
        with self._lock:
            if self._closed.is_set():
                raise ClientClosed("transport is closed")
            self._exchanges[request_id] = exchange
        track.begin(exchange)
        return exchange

    def end(self, request_id: Any) -> None:
        """The request of *request_id* (by the current thread) is over."""
        track.end()
        with self._lock:
            self._exchanges.pop(request_id, None)

    def abort(self, request_id: Any) -> None:
        """Interrupt the POST of *request_id*, if it is still waiting for its reply."""
        with self._lock:
            exchange = self._exchanges.get(request_id)
        if exchange is not None:
            exchange.abort()

    def close_all(self) -> None:
        """Interrupt every POST and shut every tracked response down (the transport closes)."""
        with self._lock:
            exchanges = list(self._exchanges.values())
            responses = list(self._responses.values())
        for exchange in exchanges:
            exchange.abort()
        for response in responses:
            common.shutdown_response(response)

    # -- 2026-07-28 requests -------------------------------------------------------------

    def add_modern(self, request_id: Any, method: str) -> None:
        with self._lock:
            self._modern[request_id] = method

    def pop_method(self, request_id: Any) -> str | None:
        """Forget *request_id* (answered, failed); the method it was, if modern."""
        with self._lock:
            return self._modern.pop(request_id, None)

    def track(self, request_id: Any, response: requests.Response) -> None:
        with self._lock:
            self._responses[request_id] = response

    def untrack(self, request_id: Any, *, forget: bool = False) -> None:
        with self._lock:
            self._responses.pop(request_id, None)
            self._cancelled.discard(request_id)
            if forget:
                self._modern.pop(request_id, None)

    def stream_cancelled(self, request_id: Any) -> bool:
        with self._lock:
            return request_id in self._cancelled

    def cancel_by_closing(self, request_id: Any) -> None:
        """Cancel a 2026-07-28 request by closing its response stream (if not answered yet)."""
        with self._lock:
            if self._modern.pop(request_id, None) is None:
                return  # already answered: nothing to cancel
            self._cancelled.add(request_id)
            response = self._responses.get(request_id)
        if response is not None:
            common.shutdown_response(response)
