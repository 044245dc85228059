"""The policy chain every request goes through: interceptors, then retries, then one attempt.

::

    caller ─► interceptors (list order, first outermost)
                └─► retries (transient failures, within the call's deadline)
                      └─► one attempt: span + trace context in _meta ─► send ─► wait
                            └─► resent once after the connection renegotiated (a
                                re-initialized HTTP session, a re-probed era) or the
                                tools were re-listed (a stale x-mcp-header schema)

One request is one pass through the interceptors however often it is retried; each
attempt is its own span.  Every request a connection sends goes through
:meth:`Policies.run`, the era probe and the handshake included, with three exceptions
that have no result an interceptor could see or a retry could repeat: a request whose
response outlives the call (``request_async``, a ``subscriptions/listen`` stream), and
the ``initialize`` written behind a ``server/discover`` probe that is still unanswered
(``negotiate._race``: its answer only tells the probe it lost, and
when it wins, that answer is taken as it is).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from mcpsync import types
from mcpsync.client.interceptors import Interceptor, OutgoingRequest, run_interceptors
from mcpsync.client.retry import SAFE_METHODS, RetryPolicy, run_with_retries
from mcpsync.client.tracing import Tracing
from mcpsync.exceptions import HTTPStatusError, ServerError, SessionExpired
from mcpsync.rpc.deadline import Deadline
from mcpsync.rpc.session import PendingRequest, ProgressCallback, Session

__all__ = ["Channel", "Policies", "Wait"]

#: How an attempt waits for its reply (the default: ``session.wait``; the era probe races).
Wait = Callable[[PendingRequest], dict[str, Any]]
#: A ``tools/call`` refused for a stale ``x-mcp-header`` schema (2026-07-28, HTTP).
_HEADER_MISMATCH = -32020


class Channel(Protocol):
    """What the chain needs of the connection a request goes out on
    (:class:`~mcpsync.client.connection.Connection` is one)."""

    @property
    def session(self) -> Session: ...

    @property
    def transport(self) -> object: ...

    @property
    def protocol_version(self) -> str: ...

    @property
    def generation(self) -> int: ...

    prior_unconfirmed: bool

    def renegotiated(self, exc: BaseException, generation: int, deadline: Deadline) -> bool:
        """Whether a request sent at *generation* that failed with *exc* should be resent."""


class Policies:
    """The retry policy, interceptors and tracing of one client.

    :param owner: what interceptors see as ``request.client`` (the :class:`~mcpsync.Client`).
    :param tool: the tool of a name, as last listed (its hints say whether a call may be retried).
    :param relist: lists the tools again by a deadline (their ``x-mcp-header`` schemas went stale).
    :param session_retry: which request refused by a lost session is resent after the
        re-initialize: ``"safe"`` (all but ``tools/call``), ``"all"`` or ``"none"``.
    """

    def __init__(self, owner: object, tool: Callable[[str], types.Tool | None], relist: Callable[[Deadline], object], *,
                 retry: RetryPolicy | None, interceptors: Sequence[Interceptor], tracing: bool,
                 session_retry: str = "safe") -> None:
        self._owner = owner
        self._tool = tool
        self._relist = relist
        self.retry = retry
        self.interceptors = tuple(interceptors)
        self.tracing = Tracing(tracing)
        self._session_retry = session_retry

    def run(self, conn: Channel, method: str, params: dict[str, Any] | None, deadline: Deadline, *,
            progress: ProgressCallback | None = None, retry: bool | None = None, wait: Wait | None = None,
            ) -> dict[str, Any]:
        """Send *method* through the chain by *deadline* and return its raw result."""
        if self.interceptors:
            return self.intercept(method, params, lambda body: self._retried(
                conn, method, body, deadline, progress, retry, wait))
        return self._retried(conn, method, params, deadline, progress, retry, wait)

    def _retried(self, conn: Channel, method: str, params: dict[str, Any] | None, deadline: Deadline,
                 progress: ProgressCallback | None, retry: bool | None, wait: Wait | None) -> dict[str, Any]:
        try:
            return self._attempt(conn, method, params, deadline, progress, wait)
        except Exception as exc:
            policy = self.retry if retry is not True else (self.retry or RetryPolicy())
            if policy is None:
                raise
            first = exc  # only a failure pays for the retry machinery
        return run_with_retries(lambda: self._attempt(conn, method, params, deadline, progress, wait), policy=policy,
                                repeatable=self._repeatable(method, params, retry), deadline=deadline,
                                connection_open=lambda: conn.session.closed is None, method=method, first_error=first)

    def intercept(self, method: str, params: dict[str, Any] | None,
                  send: Callable[[dict[str, Any] | None], dict[str, Any]]) -> dict[str, Any]:
        """Run the interceptors around *send* (``send(params)`` returns the raw result)."""
        request = OutgoingRequest(method, dict(params or {}), self._owner)

        def last(req: OutgoingRequest) -> dict[str, Any]:
            # An interceptor that left the params empty sends none, as the caller would have.
            return send(req.params if req.params or params is not None else None)

        result = run_interceptors(self.interceptors, request, last)
        if not isinstance(result, dict):
            raise TypeError(f"an interceptor returned {type(result).__name__} for {method!r}; it must return"
                            " call_next(request) or a result dict")
        return result

    def _repeatable(self, method: str, params: dict[str, Any] | None, retry: bool | None) -> bool:
        if retry is not None:
            return retry
        if method in SAFE_METHODS:
            return True
        if method == "tools/call" and params is not None:
            tool = self._tool(str(params.get("name")))
            hints = tool.annotations if tool is not None else None
            return hints is not None and bool(hints.idempotent_hint or hints.read_only_hint)
        return False

    def _attempt(self, conn: Channel, method: str, params: dict[str, Any] | None, deadline: Deadline,
                 progress: ProgressCallback | None, wait: Wait | None) -> dict[str, Any]:
        generation = conn.generation
        try:
            raw = self._send(conn, method, params, deadline, progress, wait)
        except (ServerError, HTTPStatusError) as exc:
            if isinstance(exc, ServerError) and exc.code == _HEADER_MISMATCH and method == "tools/call":
                self._relist(deadline)  # our x-mcp-header schemas were stale: refresh, resend once
            elif not conn.renegotiated(exc, generation, deadline):
                raise
            elif isinstance(exc, SessionExpired) and not self._resent_after_expiry(method):
                raise SessionExpired(404, f"session expired; the client re-initialized but {method} was not"
                                     " resent (session_retry)") from None
            raw = self._send(conn, method, params, deadline, progress, wait)
        conn.prior_unconfirmed = False  # the server took the era we sent on
        return raw

    def _resent_after_expiry(self, method: str) -> bool:
        return self._session_retry == "all" or (self._session_retry == "safe" and method != "tools/call")

    def _send(self, conn: Channel, method: str, params: dict[str, Any] | None, deadline: Deadline,
              progress: ProgressCallback | None, wait: Wait | None) -> dict[str, Any]:
        session = conn.session
        span = None if self.tracing.off else self.tracing.span(method, params, conn)
        if span is None:
            pending = session.request(method, params, deadline, progress=progress)
            return session.wait(pending) if wait is None else wait(pending)
        with span:
            pending = session.request(method, span.inject(params), deadline, progress=progress)
            span.sent(pending.id)
            raw = session.wait(pending) if wait is None else wait(pending)
            span.result(raw)
            return raw

    def notify(self, conn: Channel, method: str, params: dict[str, Any] | None,
               deadline: Deadline | None = None) -> None:
        """Send a notification through the interceptors (``is_notification`` set)."""
        if not self.interceptors:
            conn.session.notify(method, params, deadline)
            return
        request = OutgoingRequest(method, dict(params or {}), self._owner, is_notification=True)

        def last(req: OutgoingRequest) -> None:
            conn.session.notify(req.method, req.params if req.params or params is not None else None, deadline)

        run_interceptors(self.interceptors, request, last)
