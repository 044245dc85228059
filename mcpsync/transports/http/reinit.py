"""Requests the Streamable HTTP transport makes on its own behalf, with ids of its own.

Part of :class:`~mcpsync.transports.http.streamable.StreamableHTTPTransport`, kept apart
for size:

* **session expiry** (handshake era): a 404 for a request that carried a
  session id means the session is gone.  One re-initialize, shared by all the
  threads that saw the 404, replays the client's own ``initialize`` (with an
  id the session never uses) and ``notifications/initialized``;
* **header mismatch** (2026-07-28): a ``tools/call`` refused with -32020
  (``HeaderMismatch``) means our copy of the tool's ``x-mcp-header``
  annotations is stale.  The transport re-lists the tools (all pages) and the
  caller resends the call once, as the spec recommends.

The replies to these internal requests never reach the session; other
messages on their streams are passed up as usual.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import ConnectionClosed, RequestTimeout, SessionExpired
from mcpsync.transports.http import common as common
from mcpsync.transports.http.modern import ToolHeaders, routing_headers
from mcpsync.transports.http.sse_parser import SSEParser
from mcpsync.transports.base import MessageHandler, encode_message

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["ReinitMixin"]

log = logging.getLogger("mcpsync.transports.http.streamable")

#: Bound on the pages one re-listing reads (a cursor loop must not spin forever).
_MAX_PAGES = 100


class ReinitMixin:
    """Internal requests; the transport supplies the attributes below."""

    url: str
    reinitializations: int
    _n: int
    _max: int
    _listen: bool
    _session_retry: str
    _session_id: str | None
    _protocol_version: str | None
    _init_message: dict[str, Any] | None
    _initialized_message: dict[str, Any] | None
    _internal_ids: itertools.count[int]
    _reinit_lock: threading.Lock
    _call: threading.local
    _lock: threading.Lock
    _streams: set[requests.Response]
    _on_message: MessageHandler | None
    _tools: ToolHeaders

    def _post(self, body: bytes, *, what: str, headers: dict[str, str] | None = None) -> requests.Response:
        raise NotImplementedError

    def _headers_for(self, *, accept: str = "", json_body: bool = True) -> dict[str, str]:
        raise NotImplementedError

    def _capture_session(self, response: requests.Response) -> None:
        raise NotImplementedError

    def _ensure_listener(self) -> None:
        raise NotImplementedError

    def _internal_id(self, purpose: str) -> str:
        return f"mcpsync-{purpose}-{self._n}-{next(self._internal_ids)}"

    # -- session expiry --------------------------------------------------------------------

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
        # Threads that saw the expiry wait for the one re-initializing, each within its deadline.
        deadline: float | None = getattr(self._call, "deadline", None)
        wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._reinit_lock.acquire(timeout=wait):
            raise RequestTimeout("the session expired and the re-initialize did not finish by the deadline")
        try:
            if self._session_id != stale:
                return  # another thread already did it
            init = self._init_message
            if init is None:
                raise SessionExpired(404, "session expired before the handshake completed")
            self._session_id = None
            internal = self._internal_id("reinit")
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
                reply = self._internal_reply(response, internal)
                result = reply.get("result") if reply is not None else None
                if not isinstance(result, dict):
                    raise SessionExpired(404, "session expired and the re-initialize got no reply")
                if isinstance(result.get("protocolVersion"), str):
                    self._protocol_version = result["protocolVersion"]
                initialized = self._initialized_message or {
                    "jsonrpc": "2.0", "method": "notifications/initialized"}
                response = self._post(encode_message(initialized), what="re-initialized notification")
                response.close()
            except ConnectionClosed as exc:
                raise SessionExpired(404, f"session expired and re-initializing failed: {exc}") from exc
            self.reinitializations += 1
        finally:
            self._reinit_lock.release()
        if self._listen:
            self._ensure_listener()

    # -- header mismatch -------------------------------------------------------------------

    def _relist_tools(self, call: Mapping[str, Any]) -> None:
        """Refresh the ``x-mcp-header`` annotations after a -32020, with the call's ``_meta``.

        Best effort: a failure leaves the old annotations, and the resent call
        then fails with the server's error.
        """
        params = call.get("params")
        meta = dict(params.get("_meta") or {}) if isinstance(params, dict) else {}
        meta.pop("progressToken", None)
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._internal_id("tools"), "method": "tools/list",
                                       "params": {"_meta": meta, **({"cursor": cursor} if cursor else {})}}
            headers = {**self._headers_for(), **routing_headers(message)}
            try:
                response = self._post(encode_message(message), what="POST tools/list (refresh)", headers=headers)
            except ConnectionClosed as exc:
                log.debug("re-listing tools failed: %s", exc)
                return
            if not 200 <= response.status_code < 300:
                log.debug("re-listing tools was refused (%s)", response.status_code)
                response.close()
                return
            reply = self._internal_reply(response, message["id"])
            result = reply.get("result") if reply is not None else None
            if not isinstance(result, dict):
                return
            self._tools.learn(result)
            next_cursor = result.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                return
            cursor = next_cursor

    # -- reading replies to internal requests ----------------------------------------------

    def _internal_reply(self, response: requests.Response, internal: str) -> dict[str, Any] | None:
        """Read the reply to our own request (JSON or SSE); other messages go up as usual."""
        found: list[dict[str, Any]] = []
        try:
            if common.is_event_stream(response):
                parser = SSEParser(self._max)
                with self._lock:
                    self._streams.add(response)
                for chunk in common.iter_body(response):
                    for event in parser.feed(chunk):
                        if event.event == "message" and event.data.strip() and \
                                self._internal_item(json.loads(event.data), internal, found):
                            return found[0]
                return None
            raw = b"".join(common.iter_body(response))
            if raw.strip() and self._internal_item(json.loads(raw), internal, found):
                return found[0]
            return None
        except Exception as exc:  # noqa: BLE001 - bad JSON, OSError or requests' own read errors
            log.debug("reply to an internal request unreadable: %s", type(exc).__name__)
            return None
        finally:
            with self._lock:
                self._streams.discard(response)
            response.close()

    def _internal_item(self, payload: Any, internal: str, found: list[dict[str, Any]]) -> bool:
        for item in payload if isinstance(payload, list) else [payload]:
            if isinstance(item, dict) and item.get("id") == internal and "method" not in item:
                found.append(item)
            elif self._on_message is not None:
                self._on_message(item)
        return bool(found)
