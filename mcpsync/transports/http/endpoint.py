"""What both HTTP transports (Streamable HTTP and legacy HTTP+SSE) hold and declare."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import RequestTimeout
from mcpsync.transports.base import Transport
from mcpsync.transports.http import common as common
from mcpsync.transports.http.body import ACCEPT_ENCODING
from mcpsync.transports.http.fast_send import Sender

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["HttpEndpoint"]


class HttpEndpoint(Transport):
    """What both HTTP transports hold: the URL, headers, session, sender and limits."""

    #: Each POST has its own reply (or its own failure), bounded by the call's deadline,
    #: and can run on a worker of the transport's own.
    independent_requests = True
    bounded_send = True
    detached_send = True

    def _init_endpoint(
        self,
        url: str,
        *,
        auth: Any,
        headers: Mapping[str, str] | None,
        session: requests.Session | None,
        connect_timeout: float,
        read_timeout: float,
        max_message_bytes: int,
        follow_redirects: bool,
    ) -> None:
        """Validate *url* and set the shared attributes.

        :raises ValueError: for a URL that is not http(s).
        """
        if common.origin(url)[0] not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {common.redact_url(url)}")
        self.url = url
        # Only the codings we decode (requests would offer br/zstd when their modules exist).
        self._headers = {"Accept-Encoding": ACCEPT_ENCODING, **(headers or {})}
        self._own_session = session is None
        self._session = session if session is not None else common.new_session()
        self._sender = Sender(self._session, auth, url)
        self._timeout: tuple[float, float] = (connect_timeout, read_timeout)
        self._max = max_message_bytes
        self._follow = follow_redirects

    def _bounded(self, deadline: float | None, what: str) -> tuple[float, float]:
        """The (connect, read) timeouts, cut to what is left before *deadline*.

        :raises RequestTimeout: when *deadline* has passed (nothing is sent then).
        """
        if deadline is None:
            return self._timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise RequestTimeout(f"{what}: the deadline passed before it was sent")
        return min(self._timeout[0], left), min(self._timeout[1], left)
