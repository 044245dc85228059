"""The policy chain every request goes through: interceptors, then retries, then a traced send.

::

    caller ─► interceptors (list order, first outermost)
                └─► retries (transient failures, within the call's deadline)
                      └─► one attempt: span + trace context in _meta ─► send ─► wait

One request is one pass through the interceptors however often it is
retried; each attempt is its own span.  :class:`~mcpsync.client.connection.Connection`
calls :meth:`Policies.request` for everything it sends (the era probe and the
handshake too), so a policy is never skipped.  ``request_async`` and the
``subscriptions/listen`` streams are not run through it: they do not wait for
a result an interceptor could see.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from mcpsync import types
from mcpsync.client.interceptors import Interceptor, OutgoingRequest, run_interceptors
from mcpsync.client.retry import SAFE_METHODS, RetryPolicy, run_with_retries
from mcpsync.client.tracing import RequestSpan, Tracing
from mcpsync.exceptions import HTTPStatusError, ServerError
from mcpsync.rpc.session import ProgressCallback, Session
from mcpsync.types.modern import PROTOCOL_VERSION_KEY

__all__ = ["Channel", "Policies"]


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
    def era_generation(self) -> int: ...

    def era_confirmed(self) -> None:
        """A request sent on the current era was accepted."""

    def stale_prior(self, exc: BaseException, generation: int, timeout: float | None) -> bool:
        """Whether a request sent at era *generation* that failed with *exc* should be resent."""


class Policies:
    """The retry policy, interceptors and tracing of one client.

    :param owner: what interceptors see as ``request.client`` (the :class:`~mcpsync.Client`).
    :param tool: the tool of a name, as last listed (its hints say whether a call may be retried).
    """

    def __init__(
        self,
        owner: object,
        tool: Callable[[str], types.Tool | None],
        *,
        retry: RetryPolicy | None,
        interceptors: Sequence[Interceptor],
        tracing: bool,
    ) -> None:
        self._owner = owner
        self._tool = tool
        self.retry = retry
        self.interceptors = tuple(interceptors)
        self.tracing = Tracing(tracing)

    # -- requests --------------------------------------------------------------

    def request(
        self,
        conn: Channel,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None,
        progress: ProgressCallback | None = None,
        reset_on_progress: bool = True,
        max_total: float | None = None,
        retry: bool | None = None,
        start: float | None = None,
    ) -> dict[str, Any]:
        """Send *method* through the chain and return its raw result.

        :param start: when the call began (default: now); *timeout* and *max_total* count
            from there.
        """
        if start is None:
            start = time.monotonic()
        if not self.interceptors:
            return self._with_retries(conn, method, params, start, timeout, progress, reset_on_progress,
                                      max_total, retry)

        def send(params: dict[str, Any] | None) -> dict[str, Any]:
            return self._with_retries(conn, method, params, start, timeout, progress, reset_on_progress,
                                      max_total, retry)

        return self.intercept(method, params, send)

    def _with_retries(
        self,
        conn: Channel,
        method: str,
        params: dict[str, Any] | None,
        start: float,
        timeout: float | None,
        progress: ProgressCallback | None,
        reset_on_progress: bool,
        max_total: float | None,
        retry: bool | None,
    ) -> dict[str, Any]:
        # The first try keeps the caller's timeout semantics (reset on progress),
        # less what the interceptors already spent of it.
        spent = time.monotonic() - start
        try:
            return self._attempt(conn, method, params, progress, _less(timeout, spent),
                                 reset_on_progress, _less(max_total, spent))
        except Exception as exc:
            policy = self.retry if retry is not True else (self.retry or RetryPolicy())
            if policy is None:
                raise
            first = exc  # only a failure pays for the retry machinery

        def attempt(remaining: float | None) -> dict[str, Any]:
            return self._attempt(conn, method, params, progress, remaining, False, remaining)

        return run_with_retries(
            attempt,
            policy=policy,
            repeatable=self._repeatable(method, params, retry),
            deadline=_deadline(start, timeout, max_total),
            connection_open=lambda: conn.session.closed is None,
            method=method,
            first_error=first,
        )

    def intercept(
        self,
        method: str,
        params: dict[str, Any] | None,
        send: Callable[[dict[str, Any] | None], dict[str, Any]],
    ) -> dict[str, Any]:
        """Run the interceptors around *send* (``send(params)`` returns the raw result).

        :meth:`request` ends in the retries and a traced send; the era probe on one
        ordered stream ends in its race with ``initialize`` (see :mod:`.negotiate`).
        """
        if not self.interceptors:
            return send(params)
        request = OutgoingRequest(method, dict(params or {}), self._owner)

        def last(req: OutgoingRequest) -> dict[str, Any]:
            # An interceptor that left the params empty sends none, as the caller would have.
            return send(req.params if req.params or params is not None else None)

        result = run_interceptors(self.interceptors, request, last)
        if not isinstance(result, dict):
            raise TypeError(
                f"an interceptor returned {type(result).__name__} for {method!r}; it must return"
                " call_next(request) or a result dict"
            )
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

    def _attempt(
        self,
        conn: Channel,
        method: str,
        params: dict[str, Any] | None,
        progress: ProgressCallback | None,
        timeout: float | None,
        reset_on_progress: bool,
        max_total: float | None,
    ) -> dict[str, Any]:
        generation = conn.era_generation
        try:
            raw = self._send(conn, method, params, progress, timeout, reset_on_progress, max_total)
        except (ServerError, HTTPStatusError) as exc:
            # A remembered era (prior_discover=) may have gone stale: re-probe once, resend.
            if not conn.stale_prior(exc, generation, timeout):
                raise
            return self._send(conn, method, params, progress, timeout, reset_on_progress, max_total)
        conn.era_confirmed()  # the server took the era we sent on
        return raw

    def _send(
        self,
        conn: Channel,
        method: str,
        params: dict[str, Any] | None,
        progress: ProgressCallback | None,
        timeout: float | None,
        reset_on_progress: bool,
        max_total: float | None,
    ) -> dict[str, Any]:
        session = conn.session
        # The write (a stdio pipe, an HTTP POST) is bounded by this attempt's deadline too.
        started = time.monotonic()
        deadline = _deadline(started, timeout, max_total)
        span = self.span(conn, method, params)
        if span is None:
            pending = session.send_request(method, params, on_progress=progress, started=started, deadline=deadline)
            return session.wait(pending, timeout=timeout, reset_on_progress=reset_on_progress, max_total=max_total)
        with span:
            pending = session.send_request(
                method, span.inject(params), on_progress=progress, started=started, deadline=deadline
            )
            span.sent(pending.id)
            raw = session.wait(pending, timeout=timeout, reset_on_progress=reset_on_progress, max_total=max_total)
            span.result(raw)
            return raw

    def span(self, conn: Channel, method: str, params: dict[str, Any] | None) -> RequestSpan | None:
        """A tracing span for one request on *conn* (``None``: tracing is off)."""
        # During the probe the version is only in the per-request _meta being tried.
        version = conn.protocol_version or (conn.session.default_meta or {}).get(PROTOCOL_VERSION_KEY)
        return self.tracing.span(
            method, params, version=version if isinstance(version, str) else None, transport=conn.transport
        )

    # -- notifications ---------------------------------------------------------

    def notify(self, conn: Channel, method: str, params: dict[str, Any] | None) -> None:
        """Send a notification through the interceptors (``is_notification`` set)."""
        if not self.interceptors:
            conn.session.notify(method, params)
            return
        request = OutgoingRequest(method, dict(params or {}), self._owner, is_notification=True)

        def last(req: OutgoingRequest) -> None:
            conn.session.notify(req.method, req.params if req.params or params is not None else None)
            return None

        run_interceptors(self.interceptors, request, last)


def _deadline(start: float, timeout: float | None, max_total: float | None) -> float | None:
    """The monotonic time the whole call must end by (retries and backoff included)."""
    if timeout is None:
        return None if max_total is None else start + max_total
    end = start + timeout
    return end if max_total is None else min(end, start + max_total)


def _less(limit: float | None, spent: float) -> float | None:
    return None if limit is None else max(0.0, limit - spent)
