"""Interceptors: user functions around every request (and notification) a client sends.

An interceptor is ``fn(request, call_next)``.  It may look at or change
``request.params``, then either return ``call_next(request)`` (the raw result
dict of the request, or an exception raised from it) or return a result of
its own without calling ``call_next`` (a short-circuit: nothing is sent).
Interceptors run in list order on the caller's thread, the first one
outermost, so the first sees the request first and the result last.

Notifications go through the same functions with ``request.is_notification``
set; ``call_next`` then returns ``None``.  An exception an interceptor raises
reaches the caller unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Optional

import attrs

__all__ = ["OutgoingRequest", "Interceptor", "CallNext", "run_interceptors"]


@attrs.define(eq=False)
class OutgoingRequest:
    """A request (or notification) on its way out, as interceptors see it.

    :ivar method: the JSON-RPC method, e.g. ``"tools/call"``.
    :ivar params: the params; change it in place or replace it.  The client
        adds its own ``_meta`` entries (protocol version, progress token, trace
        context) after the interceptors ran, and keeps yours where both set a key.
    :ivar client: the :class:`~mcpsync.Client` sending it (typed ``Any`` here because this
        module sits below the client, which imports it).
    :ivar is_notification: ``True`` for a notification (``call_next`` returns ``None``).
    """

    method: str
    params: dict[str, Any]
    client: Any
    is_notification: bool = False


#: The rest of the chain, as an interceptor calls it.
CallNext = Callable[[OutgoingRequest], Optional[dict[str, Any]]]
#: ``fn(request, call_next) -> result``.
Interceptor = Callable[[OutgoingRequest, CallNext], Optional[dict[str, Any]]]


def run_interceptors(interceptors: Sequence[Interceptor], request: OutgoingRequest,
                     send: Callable[[OutgoingRequest], dict[str, Any] | None]) -> dict[str, Any] | None:
    """Run *request* through *interceptors* (first outermost), ending in *send*."""

    def step(index: int) -> CallNext:
        if index == len(interceptors):
            return send
        interceptor = interceptors[index]
        following = step(index + 1)

        def call(req: OutgoingRequest) -> dict[str, Any] | None:
            return interceptor(req, following)

        return call

    return step(0)(request)
