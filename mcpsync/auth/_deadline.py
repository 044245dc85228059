"""The calling request's deadline, inside the auth handler (refresh and step-up are part of the call).

A transport that bounds a request by a deadline puts it on the
``PreparedRequest`` it sends, as the attribute named :data:`ATTRIBUTE` (a
``time.monotonic()`` value).  :class:`~mcpsync.auth.OAuth` reads it where
``requests`` hands it the request (``__call__`` and the response hook) and
makes it the current thread's budget with :func:`within`.  Everything the
handler then does on the network (discovery, registration, the token request)
waits at most what is left (:func:`bounded`), and each lock it takes is
waited for only as long (:func:`held`); past the deadline it raises
:class:`~mcpsync.exceptions.RequestTimeout`, not an :class:`AuthError`.

An interactive loopback login is the one exception (:func:`suspended`): the
person at the browser has the login's own ``timeout``, and the code exchange
after it is not cut short by a deadline that passed meanwhile.

The budget is per thread: the handler runs on the thread that sends the
request, and a nested :func:`within` can only shorten it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..exceptions import RequestTimeout

__all__ = ["ATTRIBUTE", "bounded", "capped", "expired", "held", "of", "passed", "remaining", "suspended", "within"]

#: The ``PreparedRequest`` attribute a transport sets to the request's deadline.
ATTRIBUTE = "mcpsync_deadline"

_local = threading.local()


def of(request: Any) -> float | None:
    """The deadline a transport put on *request* (a ``PreparedRequest``), if any."""
    deadline = getattr(request, ATTRIBUTE, None)
    return float(deadline) if isinstance(deadline, (int, float)) else None


def remaining() -> float | None:
    """Seconds left of the current thread's budget (``None``: unbounded); may be negative."""
    deadline: float | None = getattr(_local, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


@contextlib.contextmanager
def within(deadline: float | None) -> Iterator[None]:
    """Run the block with *deadline* as the budget (the earlier one, when already inside one)."""
    previous: float | None = getattr(_local, "deadline", None)
    if deadline is not None and previous is not None:
        deadline = min(deadline, previous)
    _local.deadline = deadline if deadline is not None else previous
    try:
        yield
    finally:
        _local.deadline = previous


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Run the block without a budget (the interactive login, bounded by its own timeout)."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = None
    try:
        yield
    finally:
        _local.deadline = previous


def expired(what: str) -> RequestTimeout:
    """The error for *what* not finishing within the call's deadline."""
    left = remaining()
    return RequestTimeout(f"{what} did not finish by the call's deadline",
                          elapsed=max(0.0, -left) if left is not None else 0.0)


def bounded(timeout: tuple[float, float], what: str) -> tuple[float, float]:
    """*timeout* (connect, read), each part cut to what is left of the budget.

    :raises RequestTimeout: when nothing is left.
    """
    left = remaining()
    if left is None:
        return timeout
    if left <= 0:
        raise expired(what)
    return min(timeout[0], left), min(timeout[1], left)


def capped(seconds: float) -> float:
    """*seconds*, cut to what is left of the budget (never below zero): how long a wait
    with a limit of its own (a lock's time to live) may last for this call."""
    left = remaining()
    return seconds if left is None else max(0.0, min(seconds, left))


def passed() -> bool:
    """Whether the current budget is used up (a failed request then timed out, whatever it says)."""
    left = remaining()
    return left is not None and left <= 0.01


@contextlib.contextmanager
def held(lock: Any, what: str) -> Iterator[None]:
    """Hold *lock* (a ``threading`` lock), waiting at most what is left of the budget.

    :raises RequestTimeout: when the budget runs out first (*lock* not held).
    """
    left = remaining()
    if left is None:
        lock.acquire()
    elif left <= 0 or not lock.acquire(timeout=left):
        raise expired(what)
    try:
        yield
    finally:
        lock.release()
