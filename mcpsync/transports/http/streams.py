"""Reading SSE streams: the one path from bytes to delivered messages.

:func:`pump` reads a ``text/event-stream`` response and delivers the JSON-RPC
messages its ``message`` events carry, in order, as each event arrives (never waiting
for the stream to end: the official SDK's server ends a stream ~44 ms after its last
event).  Every stream of both HTTP transports goes through it: a POST's reply stream
(read by the caller until its reply, each read bounded by the call's deadline), its
resumption, the listening GET stream and the legacy transport's stream.

A reply stream in the non-standard "result fragment" dialect (``event: result`` …
``event: complete``) fails its request at once with
:class:`~mcpsync.exceptions.ProtocolError` and is never resumed (see
``docs/websocket.rst``, *SSE "result fragment" streams*).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import ProtocolError
from mcpsync.rpc.deadline import Deadline
from mcpsync.transports.http.body import bound_next_read, iter_body
from mcpsync.transports.http.sse_parser import SSEEvent, SSEParser

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["pump"]

log = logging.getLogger(__name__)

#: Event types that end a fragment-dialect stream.
_DIALECT_END = frozenset({"complete", "error"})


class _Dialect(ProtocolError):
    """A reply stream in the fragment dialect: event types *types* (an end marker came before the reply).

    Private (not in the tree of :mod:`mcpsync.exceptions`): callers see a :class:`ProtocolError`.
    """

    def __init__(self, types: set[str]) -> None:
        names = "/".join(f"'{name}'" for name in sorted(types | {"result", "complete"}))
        super().__init__(
            f"the server streamed the result as non-standard SSE {names} events instead of a JSON-RPC"
            " response; mcpsync does not reassemble them (see docs/websocket.rst, 'SSE result fragment"
            " streams')")


def pump(response: requests.Response, parser: SSEParser, deliver: Callable[[Any], None], *,
         wanted: Any = None, deadline: Deadline | None = None, idle: float = 300.0,
         odd: set[str] | None = None, other: Callable[[SSEEvent], None] | None = None) -> bool:
    """Read *response*'s events and deliver their messages; whether *wanted*'s reply passed.

    Returns once the reply to request *wanted* was delivered (with *wanted*), or at the
    end of the stream.  Each read waits at most what is left of *deadline* (re-read
    before each read: progress may have moved it) and *idle* seconds; a read past
    them raises, as any broken read does.  With *odd*, event types other than
    ``message`` are collected in it (the fragment dialect); *other* gets each of them.

    :raises _Dialect: when *odd* is given and a dialect end marker arrives before the reply.
    :raises MessageTooLarge: for an event over the parser's cap.
    """
    got = False
    for chunk in iter_body(response):
        for event in parser.feed(chunk):
            if event.event != "message":
                if other is not None:
                    other(event)
                if odd is not None:
                    odd.add(event.event)
                    if event.event in _DIALECT_END and not got:
                        raise _Dialect(odd)
                continue
            if not event.data.strip():
                continue  # a priming event
            try:
                payload = json.loads(event.data)
            except ValueError:
                log.warning("ignoring an SSE event that is not JSON")
                continue
            for item in payload if isinstance(payload, list) else [payload]:
                deliver(item)
                if wanted is not None and not got and isinstance(item, dict) and "method" not in item \
                        and item.get("id") == wanted:
                    got = True
        if got:
            return got
        bound_next_read(response, deadline, idle)
    return got
