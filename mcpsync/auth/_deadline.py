"""The calling request's deadline, inside the auth handler (refresh and step-up are part of the call).

A transport that bounds a request by a :class:`~mcpsync.rpc.deadline.Deadline` puts it on
the ``PreparedRequest`` it sends, as the attribute named
:data:`~mcpsync.rpc.deadline.REQUEST_ATTRIBUTE`.  :class:`~mcpsync.auth.OAuth` reads it
where ``requests`` hands it the request (``__call__`` and the response hook) and makes it
the current thread's budget with :func:`within`.  Everything the handler then does on the
network (discovery, registration, the token request) waits at most what is left
(:func:`bounded`), and each lock it takes is waited for only as long (:func:`held`); past
the deadline it raises :class:`~mcpsync.exceptions.RequestTimeout`, not an
:class:`AuthError`.

An interactive loopback login is the one exception (:func:`suspended`): the
person at the browser has the login's own ``timeout``, and the code exchange
after it is not cut short by a deadline that passed meanwhile.

The budget is per thread: the handler runs on the thread that sends the
request, and a nested :func:`within` can only shorten it.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from typing import Any

from ..exceptions import RequestTimeout
from ..rpc.deadline import REQUEST_ATTRIBUTE, Deadline

__all__ = ["bounded", "capped", "current", "expired", "held", "of", "passed", "suspended", "within"]

_local = threading.local()


def of(request: Any) -> Deadline | None:
    """The deadline a transport put on *request* (a ``PreparedRequest``), if any."""
    deadline = getattr(request, REQUEST_ATTRIBUTE, None)
    return deadline if isinstance(deadline, Deadline) else None


def current() -> Deadline | None:
    """The current thread's budget (``None``: unbounded)."""
    deadline: Deadline | None = getattr(_local, "deadline", None)
    return deadline


@contextlib.contextmanager
def _set(deadline: Deadline | None) -> Iterator[None]:
    previous, _local.deadline = current(), deadline
    try:
        yield
    finally:
        _local.deadline = previous


def within(deadline: Deadline | None) -> contextlib.AbstractContextManager[None]:
    """Run the block with *deadline* as the budget (the earlier one, when already inside one)."""
    return _set(min(current(), deadline, key=_end))  # on a tie, the one in force


def _end(deadline: Deadline | None) -> float:
    end = None if deadline is None else deadline.end
    return math.inf if end is None else end


def suspended() -> contextlib.AbstractContextManager[None]:
    """Run the block without a budget (the interactive login, bounded by its own timeout)."""
    return _set(None)


def _left() -> float | None:
    """Seconds left of the budget (``None``: unbounded)."""
    deadline = current()
    return None if deadline is None else deadline.remaining()


def expired(what: str) -> RequestTimeout:
    """The error for *what* not finishing within the current budget (:meth:`Deadline.expired`)."""
    return (current() or Deadline(None)).expired(f"{what} ran out of the call's deadline")


def bounded(timeout: tuple[float, float], what: str) -> tuple[float, float]:
    """*timeout* (connect, read), each part cut to what is left of the budget.

    :raises RequestTimeout: when nothing is left.
    """
    if (left := _left()) is None:
        return timeout
    if left <= 0:
        raise expired(what)
    return min(timeout[0], left), min(timeout[1], left)


def capped(seconds: float) -> float:
    """*seconds*, cut to what is left of the budget (never below zero): how long a wait
    with a limit of its own (a lock's time to live) may last for this call."""
    left = _left()
    return seconds if left is None else min(seconds, left)


def passed() -> bool:
    """Whether the current budget is used up (a failed request then timed out, whatever it says).

    Within 10 ms counts: a wait cut to what was left (:func:`capped`) ends a hair before
    the deadline itself, and is a timeout all the same.
    """
    left = _left()
    return left is not None and left <= 0.01


@contextlib.contextmanager
def held(lock: Any, what: str) -> Iterator[None]:
    """Hold *lock* (a ``threading`` lock), waiting at most what is left of the budget.

    :raises RequestTimeout: when the budget runs out first (*lock* not held).
    """
    left = _left()
    if left == 0 or not lock.acquire(timeout=-1 if left is None else left):  # -1: no limit
        raise expired(what)
    try:
        yield
    finally:
        lock.release()
