"""The one time argument of a call: :class:`Deadline`.

Each public call makes one from its ``timeout=`` (or the client's default) and
``max_total_timeout`` when it starts, and hands the same object down through the
policies, every ``input_required`` round, every retry, the session and
``Transport.send``.  Whoever waits asks it, at the point of the wait, how long is
left (:meth:`Deadline.remaining`); nothing below passes seconds around.

Reset-on-progress belongs to the pending request: when the session sees progress
for a request, it moves that request's deadline window forward
(:meth:`Deadline.progressed`), so whoever holds the deadline (a transport reading a
reply stream, the caller waiting) sees the later end.  ``max_total_timeout`` is a
hard cap that nothing moves.
"""

from __future__ import annotations

import time

from mcpsync.exceptions import RequestTimeout

__all__ = ["Deadline", "REQUEST_ATTRIBUTE", "now"]

#: The clock (tests replace it).
now = time.monotonic

#: The ``requests.PreparedRequest`` attribute the HTTP transports set to the call's
#: :class:`Deadline`, so that the auth handler's token requests end by it too
#: (:mod:`mcpsync.auth._deadline` reads it).
REQUEST_ATTRIBUTE = "mcpsync_deadline"


class Deadline:
    """When a call must be done.

    :param timeout: seconds from now (``None``: no limit); with *reset_on_progress*,
        seconds without progress.
    :param max_total: a hard cap in seconds from now, progress or not.
    """

    __slots__ = ("cap", "end", "reset", "start", "timeout")

    #: The ``time.monotonic()`` value the call must end by (``None``: never).  A plain
    #: attribute, kept by :meth:`progressed`: it is read on every send and every wait.
    end: float | None

    def __init__(self, timeout: float | None, max_total: float | None = None, *,
                 reset_on_progress: bool = True) -> None:
        start = self.start = now()
        self.timeout = timeout
        cap = self.cap = None if max_total is None else start + max_total
        self.reset = reset_on_progress
        end = None if timeout is None else start + timeout
        self.end = end if cap is None or (end is not None and end < cap) else cap

    def remaining(self, at_most: float | None = None) -> float | None:
        """Seconds left, never below zero (``None``: no limit), and at most *at_most*."""
        end = self.end
        left = None if end is None else max(0.0, end - now())
        if at_most is None:
            return left
        return at_most if left is None or at_most < left else left

    def passed(self) -> bool:
        """Whether the end has come."""
        end = self.end
        return end is not None and now() >= end

    def progressed(self) -> None:
        """Progress arrived: with reset-on-progress the timeout starts again from now."""
        if self.reset and self.timeout is not None:
            end, cap = now() + self.timeout, self.cap
            self.end = end if cap is None or end < cap else cap

    def expired(self, what: str, method: str = "") -> RequestTimeout:
        """The error for *what* not done by this deadline."""
        elapsed = now() - self.start
        capped = self.cap is not None and self.end == self.cap
        return RequestTimeout(f"{what} within {elapsed:.3g}s" + (" (max total)" if capped else ""),
                              method=method, elapsed=elapsed)

    def check(self, what: str, method: str = "") -> None:
        """:raises RequestTimeout: when the end has come."""
        if self.passed():
            raise self.expired(what, method)

    def __repr__(self) -> str:
        left = self.remaining()
        return "<Deadline none>" if left is None else f"<Deadline {left:.3f}s left>"
