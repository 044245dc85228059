"""Retrying transient failures, safely and within the call's deadline.

A failure is *transient* when the server (or something in front of it) said
"not now" or the connection failed: an HTTP 502, 503 or 504, a 429 that
carries ``Retry-After``, a connection that could not be made (refused,
unreachable, connect timeout), or one lost while the request was in flight (a
reset, a POST answered by a closed socket, a reply stream that ended and could
not be resumed) on a connection that lives on: an HTTP request has a TCP
connection of its own, while over stdio or WebSocket a lost connection closes
the client's connection, and nothing is retried on it.  Only a connection never
made proves the request never ran; after the others the request may have run.  So:

* a request that never left (``ConnectionClosed`` with ``outcome_unknown``
  false, on a connection that is still open) is retried whatever its method;
* any other transient failure is retried only for a call that is safe to
  repeat: the methods in :data:`SAFE_METHODS`, a ``tools/call`` of a tool
  whose listing declares ``idempotentHint`` or ``readOnlyHint``, or a call the
  caller allowed (``call_tool(..., retry=True)``), as ``urllib3``'s ``Retry``
  does for idempotent HTTP methods.  A reply too large
  (:class:`~mcpsync.exceptions.MessageTooLarge`) is not transient.

Delays grow exponentially with full jitter (so many clients retrying at once
spread out), a ``Retry-After`` is honoured, and no delay runs past the call's
deadline: when the next attempt could not start in time, the last failure is
raised as it is (a 503 stays an :class:`~mcpsync.exceptions.HTTPStatusError`).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union

import attrs

from mcpsync.rpc.deadline import Deadline
from mcpsync.exceptions import (ClientClosed, ConnectionClosed, HTTPStatusError, MessageTooLarge, ServerStartError,
                                SessionExpired)

__all__ = ["RetryPolicy", "RetryArg", "SAFE_METHODS", "resolve_policy", "run_with_retries"]

log = logging.getLogger(__name__)

#: Methods whose repetition has no effect beyond the first: retried automatically.
SAFE_METHODS = frozenset({
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "resources/read",
    "prompts/get",
    "completion/complete",
    "ping",
    "server/discover",
    "skills/list",
    "skills/get",
    # Tasks: reading or cancelling a task twice changes nothing, and a server ignores
    # answers to input requests it already has (SEP-2663).
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "tasks/update",
})

_RETRY_STATUSES = frozenset({502, 503, 504})
#: Longest uninterrupted sleep of a backoff: close() is noticed within this.
_SLICE = 0.05


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """How transient failures are retried; pass one as ``Client(..., retry=...)``.

    ::

        client = mcpsync.Client.http(url, retry=mcpsync.RetryPolicy(attempts=5, backoff=0.5))

    :param attempts: tries in all, the first included (1 turns retrying off).
    :param backoff: the base delay in seconds; attempt *n* waits a random
        time up to ``backoff * 2 ** (n - 1)`` (full jitter).
    :param max_backoff: the longest computed delay, seconds.
    :param max_retry_after: the longest ``Retry-After`` honoured; a server
        asking for more gets its failure raised at once.
    """

    attempts: int = 3
    backoff: float = 0.25
    max_backoff: float = 5.0
    max_retry_after: float = 60.0

    def __attrs_post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if self.backoff < 0 or self.max_backoff < 0 or self.max_retry_after < 0:
            raise ValueError("backoff, max_backoff and max_retry_after must not be negative")

    def delay(self, retry: int, exc: BaseException, rng: random.Random) -> float | None:
        """Seconds to wait before retry number *retry* (1-based) after *exc*; None: do not retry."""
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(exc, HTTPStatusError) and retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        return rng.uniform(0.0, min(self.max_backoff, self.backoff * 2 ** (retry - 1)))


#: What ``Client(retry=...)`` accepts: on with the defaults, off, or a policy.
RetryArg = Union[bool, RetryPolicy, None]


def resolve_policy(value: RetryArg) -> RetryPolicy | None:
    """The policy for ``Client(retry=value)``; ``None`` means never retry."""
    if value is None or value is True:
        return RetryPolicy()
    if value is False:
        return None
    if isinstance(value, RetryPolicy):
        return value
    raise TypeError(f"retry must be True, False or a RetryPolicy, got {type(value).__name__}")


def _dropped(exc: BaseException, connection_open: bool) -> bool:
    """Whether *exc* is a request's lost connection, the client's own connection living on."""
    return (
        isinstance(exc, ConnectionClosed)
        and not isinstance(exc, (ClientClosed, ServerStartError, MessageTooLarge))
        and connection_open
    )


def never_sent(exc: BaseException, connection_open: bool) -> bool:
    """Whether *exc* proves the request never reached the server (and the connection lives on)."""
    return _dropped(exc, connection_open) and not getattr(exc, "outcome_unknown", True)


def transient(exc: BaseException, connection_open: bool) -> bool:
    """Whether *exc* is worth another attempt if the call may be repeated."""
    if isinstance(exc, HTTPStatusError) and not isinstance(exc, SessionExpired):
        return exc.status in _RETRY_STATUSES or (exc.status == 429 and exc.retry_after is not None)
    # The request may have run (the transport already resumed what could be resumed):
    # for a call safe to repeat that does not matter.
    return _dropped(exc, connection_open)


if TYPE_CHECKING:
    import random

_rng_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _random() -> random.Random:
    """The jitter's generator, made at the first retry: importing random costs a cold start
    (call under ``_rng_lock``)."""
    import random

    return random.Random()


#: Below this many seconds left, a retry is not started (see run_with_retries).
_LEAST_FOR_AN_ATTEMPT = 0.01


def run_with_retries(attempt: Callable[[], dict[str, Any]], *, policy: RetryPolicy, repeatable: bool,
                     deadline: Deadline, connection_open: Callable[[], bool], method: str, first_error: Exception,
                     sleep: Callable[[float], Any] = time.sleep) -> dict[str, Any]:
    """Decide whether the failed first try (*first_error*) is retried; run ``attempt()``
    again until it succeeds or may not be retried.

    :param repeatable: the call may run twice without harm.
    :param deadline: the call's; no delay runs past it.
    :param connection_open: whether the connection can still carry a retry.
    """
    tries = 1
    exc: Exception = first_error
    while True:
        if tries >= policy.attempts:
            raise exc
        is_open = connection_open()
        if not (never_sent(exc, is_open) or (repeatable and transient(exc, is_open))):
            raise exc
        with _rng_lock:
            delay = policy.delay(tries, exc, _random())
        left = deadline.remaining()
        if delay is None or (left is not None and left - delay <= 0):
            raise exc  # the next try could not finish in time: this failure is the answer
        log.debug("%s failed (%s); retry %d in %.2fs", method, type(exc).__name__, tries, delay)
        if not _pause(delay, connection_open, sleep):
            raise exc  # closed while we waited
        left = deadline.remaining()
        if left is not None and left < _LEAST_FOR_AN_ATTEMPT:
            # The pause overslept on a loaded machine: an attempt now could only time out
            # (even its connect), and that timeout would hide the failure that is the answer.
            raise exc
        tries += 1
        try:
            return attempt()
        except Exception as failed:
            exc = failed


def _pause(delay: float, connection_open: Callable[[], bool], sleep: Callable[[float], Any]) -> bool:
    """Wait *delay* seconds in short slices, so close() ends the wait at once; False if it did."""
    end = time.monotonic() + delay
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return True
        sleep(min(left, _SLICE))
        if not connection_open():
            return False
