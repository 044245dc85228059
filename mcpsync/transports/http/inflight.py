"""2026-07-28 requests in flight: their open responses, cancelling by closing, failing one.

Part of :class:`~mcpsync.transports.http.streamable.StreamableHTTPTransport`, kept apart
for size.  A 2026-07-28 request is cancelled by closing its response stream
(no ``notifications/cancelled``); its reader then sees the stream end and,
finding the request in ``_cancelled``, fails nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpsync.transports.http import common as common
from mcpsync.transports.base import MessageHandler, RequestErrorHandler

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["InFlightMixin"]


class InFlightMixin:
    """Tracking of 2026-07-28 requests; the transport supplies the attributes below."""

    _lock: threading.Lock
    _closed: threading.Event
    _modern: dict[Any, str]
    _responses: dict[Any, requests.Response]
    _cancelled: set[Any]
    _on_message: MessageHandler | None
    _on_request_error: RequestErrorHandler | None

    def _track(self, request_id: Any, response: requests.Response) -> None:
        with self._lock:
            self._responses[request_id] = response

    def _untrack(self, request_id: Any, *, forget: bool = False) -> None:
        with self._lock:
            self._responses.pop(request_id, None)
            self._cancelled.discard(request_id)
            if forget:
                self._modern.pop(request_id, None)

    def _stream_cancelled(self, request_id: Any) -> bool:
        with self._lock:
            return request_id in self._cancelled

    def _cancel_modern(self, message: Mapping[str, Any]) -> None:
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if not isinstance(request_id, (int, str)):
            return
        with self._lock:
            if self._modern.pop(request_id, None) is None:
                return  # already answered: nothing to cancel
            self._cancelled.add(request_id)
            response = self._responses.get(request_id)
        if response is not None:
            common.shutdown_response(response)

    def _fail_request(self, request_id: Any, exc: BaseException) -> None:
        with self._lock:
            self._modern.pop(request_id, None)
        if self._closed.is_set():
            return
        if self._on_request_error is not None:
            self._on_request_error(request_id, exc)
        elif self._on_message is not None:
            self._on_message({"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32000, "message": str(exc),
                "data": {"mcpsync": "transport", "outcome_unknown": True}}})
