"""The ``"auto"`` HTTP transport: Streamable HTTP, falling back to legacy HTTP+SSE.

Streamable HTTP first; if the ``initialize`` POST is answered 400, 404 or 405
— the signals the spec's backwards-compatibility section lists — the same URL
is opened as a legacy SSE stream.  No other URL is guessed, and network errors or 401 never fall back.

.. versionadded:: 0.1
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping
from typing import Any

from mcpsync.exceptions import ClientClosed, RequestTimeout, ServerStartError
from mcpsync.rpc.deadline import Deadline
from mcpsync.transports.base import CloseHandler, MessageHandler, Transport
from mcpsync.transports.http import wire
from mcpsync.transports.http.legacy import LegacySSETransport
from mcpsync.transports.http.streamable import FallbackToLegacy, StreamableHTTPTransport

__all__ = ["AutoHTTPTransport", "LEGACY_ONLY", "STREAMABLE_ONLY", "TRANSPORT_OPTIONS", "without"]

log = logging.getLogger(__name__)

LEGACY_ONLY = frozenset({"endpoint_timeout", "allow_cross_origin_endpoint"})
STREAMABLE_ONLY = frozenset({"reconnect_attempts", "retry_delay", "max_retry_delay", "delete_timeout", "listen"})
#: Every option a transport takes (``auth``, ``headers`` and ``session`` are passed apart).
TRANSPORT_OPTIONS = LEGACY_ONLY | STREAMABLE_ONLY | {"connect_timeout", "read_timeout", "max_message_bytes",
                                                     "follow_redirects"}


def without(options: Mapping[str, Any], names: Collection[str]) -> dict[str, Any]:
    """*options* but *names*."""
    return {k: v for k, v in options.items() if k not in names}


class AutoHTTPTransport(Transport):
    """Streamable HTTP, falling back to legacy HTTP+SSE on the spec's signals.

    Takes the parameters of :class:`StreamableHTTPTransport`; those that
    :class:`LegacySSETransport` also has are passed on to it.
    """

    def __init__(self, url: str, **options: Any) -> None:
        self.url = url
        self._options = options
        #: The transport in use: Streamable HTTP, or legacy SSE after a fallback.
        self.active: Transport = StreamableHTTPTransport(url, _fallback=True, **without(options, LEGACY_ONLY))
        self._lock = threading.Lock()
        #: Set by :meth:`close` under the lock: no fallback transport is swapped in after it.
        self._closed = False
        self._on_message: MessageHandler = lambda item: None  # until start()
        self._on_close: CloseHandler | None = None

    def describe(self) -> str:
        return self.active.describe()

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        self._on_message = on_message
        self._on_close = on_close
        self.active.start(on_message, self._forward_close(self.active))

    def _forward_close(self, inner: Transport) -> CloseHandler:
        def forward(exc: BaseException) -> None:
            if self.active is inner and self._on_close is not None:
                self._on_close(exc)
        return forward

    def send(self, message: Mapping[str, Any], deadline: Deadline | None = None) -> None:
        """Send through the active transport (see :meth:`StreamableHTTPTransport.send`)."""
        try:
            self.active.send(message, deadline)
        except FallbackToLegacy as fallback:
            self._fall_back(fallback, message, deadline)

    def _fall_back(self, fallback: FallbackToLegacy, message: Mapping[str, Any], deadline: Deadline | None) -> None:
        log.info("Streamable HTTP initialize got %s; trying legacy HTTP+SSE at %s",
                 fallback.error.status, wire.redact_url(self.url))
        legacy = LegacySSETransport(self.url, **without(self._options, STREAMABLE_ONLY))
        with self._lock:
            # close() may have run since the Streamable transport raised: it closed that one
            # and would never see the legacy one, whose stream would then open anyway.
            closed = self._closed
            if not closed:
                old, self.active = self.active, legacy
        if closed:
            legacy.close()  # never started: this only frees its session
            raise ClientClosed("transport is closed")
        old.close()  # its on_close is not forwarded: it is no longer active
        legacy.start(self._on_message, self._forward_close(legacy))
        try:
            legacy.send(message, deadline)
        except (RequestTimeout, ClientClosed):
            raise
        except Exception as exc:
            if legacy.endpoint is not None:
                raise  # the stream is open: this is the initialize's own failure
            raise ServerStartError(
                f"{wire.redact_url(self.url)}: Streamable HTTP refused initialize ({fallback.error}) and"
                f" legacy HTTP+SSE failed too ({exc})") from exc

    def close(self) -> None:
        with self._lock:
            self._closed = True
            active = self.active
        active.close()
