"""Requests the Streamable HTTP transport makes on its own behalf, with ids of its own.

:class:`Reinitializer` is composed by
:class:`~mcpsync.transports.http.streamable.StreamableHTTPTransport`; it is given
the session's :class:`~.mcp_rules.McpState`, the transport's ``post`` and what
it needs to read replies, and owns its lock and count:

* **session expiry** (handshake era): a 404 for a request that carried a
  session id means the session is gone.  One re-initialize, shared by all the
  threads that saw the 404, replays the client's own ``initialize`` (with an
  id the session never uses) and ``notifications/initialized``;
* **header mismatch** (2026-07-28): a ``tools/call`` refused with -32020
  (``HeaderMismatch``) means our copy of the tool's ``x-mcp-header``
  annotations is stale.  The transport re-lists the tools (all pages) and the
  caller resends the call once, as the spec recommends.

What each of these sends is decided in :mod:`.mcp_rules`.  The replies to these
internal requests never reach the session; other messages on their streams are
passed up as usual.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from mcpsync.exceptions import ClientClosed, ConnectionClosed, RequestTimeout, SessionExpired
from mcpsync.transports.base import encode_message
from mcpsync.transports.http import common as common
from mcpsync.transports.http.mcp_rules import McpState, routing_headers, tools_list_page
from mcpsync.transports.http.sse_messages import event_messages
from mcpsync.transports.http.sse_parser import SSEParser
from mcpsync.transports.http.streams import StreamReader

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["Reinitializer"]

log = logging.getLogger("mcpsync.transports.http.streamable")

#: Bound on the pages one re-listing reads (a cursor loop must not spin forever).
_MAX_PAGES = 100


class Post(Protocol):
    """The transport's POST of one body, bounded by the current call's deadline."""

    def __call__(self, body: bytes, *, what: str, headers: dict[str, str] | None = None) -> requests.Response: ...


class Reinitializer:
    """Re-initializes an expired session; re-lists tools after a header mismatch.

    :param n: the transport's number (in internal ids).
    :param state: the session's state (read and updated here).
    :param post: the transport's POST.
    :param headers: the transport's headers for a JSON POST (the session's included).
    :param streams: the transport's streams (an internal reply stream is shut down on close).
    :param max_bytes: cap on one SSE event.
    :param pass_up: hands a message that is not the awaited reply to the session.
    :param url: the endpoint (for logs, redacted).
    :param closed: the transport's, set when it closes.
    """

    def __init__(self, *, n: int, state: McpState, post: Post, headers: Callable[[], dict[str, str]],
                 streams: StreamReader, max_bytes: int, pass_up: Callable[[Any], None], url: str,
                 closed: threading.Event) -> None:
        self._n = n
        self._state = state
        self._post = post
        self._headers = headers
        self._streams = streams
        self._max = max_bytes
        self._pass_up = pass_up
        self._url = url
        self._closed = closed
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        #: Re-initializations performed after the session expired.
        self.count = 0

    def _internal_id(self, purpose: str) -> str:
        return f"mcpsync-{purpose}-{self._n}-{next(self._ids)}"

    # -- session expiry --------------------------------------------------------------------

    def reinitialize(self, stale: str, deadline: float | None) -> bool:
        """Replace an expired session, once for all the threads that saw it expire.

        :param deadline: the current call's; threads that saw the expiry wait
            for the one re-initializing, each within its deadline.
        :returns: whether this thread re-initialized (``False``: another one did).
        :raises SessionExpired: when there is no handshake to replay or it fails.
        :raises RequestTimeout: when the re-initialize did not finish by *deadline*.
        :raises ClientClosed: when the transport is closed (a session made now would never be deleted).
        """
        state = self._state
        wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._lock.acquire(timeout=wait):
            raise RequestTimeout("the session expired and the re-initialize did not finish by the deadline")
        try:
            if self._closed.is_set():
                # close() may have sent its DELETE already: a new session would outlive it.
                # (With our own session, closing after this check aborts the caller's exchange,
                # and with it the POST below: track refuses to write an aborted request.)
                raise ClientClosed("transport is closed")
            if state.session_id != stale:
                return False  # another thread already did it
            internal = self._internal_id("reinit")
            replay = state.replay(internal)
            state.session_id = None
            log.info("session expired; re-initializing with %s", common.redact_url(self._url))
            try:
                response = self._post(encode_message(replay), what="re-initialize")
                if not 200 <= response.status_code < 300:
                    error = common.status_error(response, "re-initialize was refused")
                    response.close()
                    raise SessionExpired(error.status, f"session expired and {error.message}",
                                         body_excerpt=error.body_excerpt)
                try:
                    state.capture_session_id(response.headers.get("Mcp-Session-Id"))
                except Exception:
                    response.close()
                    raise
                reply = self._internal_reply(response, internal)
                result = reply.get("result") if reply is not None else None
                if not isinstance(result, dict):
                    raise SessionExpired(404, "session expired and the re-initialize got no reply")
                state.note_version(reply or {}, replay)
                response = self._post(encode_message(state.initialized()), what="re-initialized notification")
                response.close()
            except ConnectionClosed as exc:
                raise SessionExpired(404, f"session expired and re-initializing failed: {exc}") from exc
            self.count += 1
        finally:
            self._lock.release()
        return True

    # -- header mismatch -------------------------------------------------------------------

    def relist_tools(self, call: Mapping[str, Any]) -> None:
        """Refresh the ``x-mcp-header`` annotations after a -32020, with the call's ``_meta``.

        Best effort: a failure leaves the old annotations, and the resent call
        then fails with the server's error.
        """
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            message = tools_list_page(call, cursor, self._internal_id("tools"))
            headers = {**self._headers(), **routing_headers(message)}
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
            self._state.tools.learn(result)
            next_cursor = result.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                return
            cursor = next_cursor

    # -- reading replies to internal requests ----------------------------------------------

    def _internal_reply(self, response: requests.Response, internal: str) -> dict[str, Any] | None:
        """Read the reply to our own request (JSON or SSE); other messages go up as usual."""
        found: list[dict[str, Any]] = []
        registered = False
        try:
            if common.is_event_stream(response):
                parser = SSEParser(self._max)
                registered = self._streams.register(response)
                if not registered:
                    return None
                for chunk in common.iter_body(response):
                    for event in parser.feed(chunk):
                        if self._internal_items(event_messages(event), internal, found):
                            return found[0]
                return None
            raw = common.read_body(response, self._max)
            if raw.strip():
                payload = json.loads(raw)
                if self._internal_items(payload if isinstance(payload, list) else [payload], internal, found):
                    return found[0]
            return None
        except Exception as exc:  # noqa: BLE001 - bad JSON, OSError or requests' own read errors
            log.debug("reply to an internal request unreadable: %s", type(exc).__name__)
            return None
        finally:
            if registered:
                self._streams.unregister(response)
            response.close()

    def _internal_items(self, items: list[Any], internal: str, found: list[dict[str, Any]]) -> bool:
        for item in items:
            if isinstance(item, dict) and item.get("id") == internal and "method" not in item:
                found.append(item)
            else:
                self._pass_up(item)
        return bool(found)
