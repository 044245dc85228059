"""What both HTTP transports (Streamable HTTP and legacy HTTP+SSE) share.

:class:`HttpTransport` holds the URL, headers, ``requests`` session and limits, and
makes every HTTP exchange through :meth:`~HttpTransport._request`: bounded by the
call's :class:`~mcpsync.rpc.deadline.Deadline`, abortable from any thread (by
:meth:`close`, or by cancelling the request it carries: see :mod:`.interrupt`), with
``requests``' failures turned into typed errors whose text leaks no secret.  It also
owns the transport's short-lived threads (named ``mcpsync-http-<kind>-N.M``), which
:meth:`close` joins, bounded.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import ClientClosed, RequestCancelled, RequestTimeout
from mcpsync.rpc.deadline import Deadline
from mcpsync.transports.base import CloseHandler, MessageHandler, Transport
from mcpsync.transports.http import wire
from mcpsync.transports.http import interrupt
from mcpsync.transports.http.body import ACCEPT_ENCODING
from mcpsync.transports.http.fast_send import Sender

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["HttpTransport"]

log = logging.getLogger(__name__)

_ids = itertools.count(1)


class HttpTransport(Transport):
    """The URL, headers, session and limits of an HTTP transport, and its exchanges.

    :param url: the MCP endpoint (legacy HTTP+SSE: its SSE URL).
    :param auth: a ``requests`` auth object (e.g. :class:`mcpsync.auth.OAuth`).
    :param headers: extra headers sent with every request.
    :param session: a ``requests.Session`` to use (proxies, TLS, retries); it is not
        closed by :meth:`close`.  By default a private one is made.
    :param connect_timeout: seconds to connect.
    :param read_timeout: the idle timeout: seconds without a byte from the server (any
        byte, keep-alive comments included) before a read fails.
    :param max_message_bytes: cap on one JSON body or one SSE event.
    :param follow_redirects: follow same-origin redirects (never cross-origin).
    """

    def __init__(self, url: str, *, auth: Any = None, headers: Mapping[str, str] | None = None,
                 session: requests.Session | None = None, connect_timeout: float = 10.0, read_timeout: float = 300.0,
                 max_message_bytes: int = 32 * 1024 * 1024, follow_redirects: bool = True) -> None:
        if wire.origin(url)[0] not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {wire.redact_url(url)}")
        self.url = url
        # Only the codings we decode (requests would offer br/zstd when their modules exist).
        self._headers = {"Accept-Encoding": ACCEPT_ENCODING, **(headers or {})}
        self._own_session = session is None
        self._session = session if session is not None else interrupt.tracking_session()
        self._sender = Sender(self._session, auth, url)
        self._timeout: tuple[float, float] = (connect_timeout, read_timeout)
        self._max = max_message_bytes
        self._follow = follow_redirects
        self._n = next(_ids)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._on_message: MessageHandler = lambda item: None  # until start()
        self._on_close: CloseHandler | None = None
        #: Exchanges in flight, by request id (or a key of their own), abortable from any thread.
        self._exchanges: dict[Any, interrupt.Exchange] = {}
        self._threads: set[threading.Thread] = set()
        self._thread_ids = itertools.count(1)

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        """Remember the callbacks; no network I/O happens until the first :meth:`send`."""
        self._on_message, self._on_close = on_message, on_close

    def _check_open(self) -> None:
        """:raises ClientClosed: once the transport is closed."""
        if self._closed.is_set():
            raise ClientClosed("transport is closed")

    # -- one exchange ----------------------------------------------------------------------

    @contextlib.contextmanager
    def _registered(self, key: Any) -> Iterator[interrupt.Exchange]:
        """An exchange under *key* for the block (this thread's): :meth:`_abort` or :meth:`close` interrupt it.

        :raises ClientClosed: once the transport is closed (checked under the lock close
            takes: an exchange registered after it would never be aborted).
        """
        exchange = interrupt.Exchange()
        with self._lock:
            self._check_open()
            self._exchanges[key] = exchange
        interrupt.begin(exchange)
        try:
            yield exchange
        finally:
            interrupt.end()
            with self._lock:
                self._exchanges.pop(key, None)

    def _abort(self, key: Any) -> None:
        """Interrupt the exchange under *key*, if any (connecting, waiting or reading)."""
        with self._lock:
            exchange = self._exchanges.pop(key, None)
        if exchange is not None:
            exchange.abort()

    def _request(self, method: str, url: str, *, headers: dict[str, str], what: str, deadline: Deadline | None,
                 data: bytes | None = None) -> requests.Response:
        """One HTTP exchange up to its headers, in the current (registered) exchange.

        Connect and headers are bounded by *deadline* (and the transport's timeouts).

        :raises RequestTimeout: when *deadline* passed first (nothing is sent if it had already).
        :raises ClientClosed: when the transport closed meanwhile.
        :raises RequestCancelled: when the request was cancelled meanwhile.
        :raises ConnectionClosed: when the server cannot be reached or the exchange failed.
        :raises HTTPStatusError: for a redirect we do not follow.
        """
        import requests

        if deadline is not None and deadline.passed():
            raise RequestTimeout(f"{what}: the deadline passed before it was sent")
        try:  # the timeouts are cut to what is left of *deadline* at each redirect hop
            return wire.http_request(self._sender, method, url, headers=headers, timeout=self._timeout, data=data,
                                       follow_redirects=self._follow, deadline=deadline)
        except requests.RequestException as exc:
            raise self._failure(exc, what, deadline) from wire.sanitized(exc)

    def _post(self, url: str, headers: dict[str, str], name: str, deadline: Deadline | None, body: bytes) -> None:
        """POST a message whose answer carries nothing to read (``202``), in an exchange of its own.

        :param name: the message's method (``"response"`` for a response), for errors.
        :raises HTTPStatusError: for a non-success status; else as :meth:`_request`.
        """
        with self._registered(object()):
            response = self._request("POST", url, headers=headers, what=f"POST {name}", deadline=deadline, data=body)
        if not 200 <= response.status_code < 300:
            with response:
                raise wire.status_error(response, f"{name} was refused")
        wire.release(response)

    def _failure(self, exc: BaseException, what: str, deadline: Deadline | None) -> Exception:
        """The typed error for an exchange that failed with *exc* (a read, or the request)."""
        if self._closed.is_set():
            return ClientClosed("transport is closed")
        exchange = interrupt.current()
        if exchange is not None and exchange.aborted:
            return RequestCancelled("request was cancelled")
        # Within 10 ms of the end: the socket timeout set to what was left has fired.
        if deadline is not None and (deadline.remaining(1.0) or 0.0) <= 0.01:
            return RequestTimeout(f"{what} got no reply by its deadline ({wire.redact_url(self.url)})",
                                  method=what.rpartition("POST ")[2].split(" ", 1)[0])  # "reading the reply to POST m": m
        return wire.connection_error(exc, f"{what} to {wire.redact_url(self.url)} failed",
                                       outcome_unknown=not wire.never_connected(exc))

    @functools.cached_property
    def _may_abort_headers(self) -> bool:
        """Whether close()/cancel can interrupt this transport's requests before their headers (:mod:`.interrupt`)."""
        return interrupt.is_tracking(self._session, self._sender.target(self.url).settings.get("proxies"))

    # -- threads and closing ---------------------------------------------------------------

    def _spawn(self, target: Callable[..., None], *args: Any, name: str) -> threading.Thread:
        """Run ``target(*args)`` on a daemon thread ``mcpsync-http-<name>-N.M``; exceptions are logged.

        :raises ClientClosed: once the transport is closed.
        """

        def run() -> None:
            try:
                target(*args)
            except BaseException:  # a thread never dies silently
                log.exception("HTTP %s thread failed", name)
            finally:
                with self._lock:
                    self._threads.discard(thread)

        thread = threading.Thread(target=run, daemon=True, name=f"mcpsync-http-{name}-{self._n}.{next(self._thread_ids)}")
        # Started under the lock: close() never joins a registered thread that is not running yet,
        # and none starts after close() took its list.
        with self._lock:
            self._check_open()
            self._threads.add(thread)
            thread.start()
        return thread

    def close(self) -> None:
        """Interrupt every exchange and stream, join the threads (bounded), report the close; idempotent."""
        with self._lock:
            first = not self._closed.is_set()
            self._closed.set()
            exchanges = list(self._exchanges.values())
        for exchange in exchanges:
            exchange.abort()
        self._interrupt_streams()
        if first:
            self._before_join()
            current = threading.current_thread()
            with self._lock:
                threads = list(self._threads)
            budget = Deadline(2.0)  # one for all
            for thread in threads:
                if thread is not current:
                    thread.join(budget.remaining())
            if self._own_session:
                self._session.close()
        self._report_close(ClientClosed("transport closed"))

    def _interrupt_streams(self) -> None:
        """At every :meth:`close`: unblock what no exchange covers (a stream, a waiting caller)."""

    def _before_join(self) -> None:
        """At the first :meth:`close`, before the threads are joined (a DELETE, say)."""

    def _report_close(self, exc: BaseException) -> None:
        with self._lock:  # once
            on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close(exc)
