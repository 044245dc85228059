"""A fast path: the caller's thread reads a quick SSE reply itself (no thread switch).

The plain path hands every POST reply stream to a reader thread
(:meth:`~.streams.StreamReader.finish_in_thread`), and the caller waits for its
reply like any other.  A server that streams its reply usually sends the
headers, one event and the end of the stream within a few milliseconds; two
thread switches (hand the stream over, wake the caller) then cost more than
the reading itself.  :func:`read_reply_inline` reads such a stream in the
caller's thread while its bytes come promptly, and hands whatever is left to a
reader thread from exactly where it stopped.  docs/threading.rst gives the
benchmark.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import MessageTooLarge
from mcpsync.transports.http import common as common
from mcpsync.transports.http.sse_parser import SSEParser
from mcpsync.transports.http.streams import Dialect, ReplyState, StreamReader

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["read_reply_inline"]

log = logging.getLogger("mcpsync.transports.http.streamable")

_CHUNK = 65536
#: Longest wait for the next segment of a reply stream in the caller's thread.
_INLINE_WAIT = 0.002
#: Longest time the caller's thread spends reading a reply stream in all.
_INLINE_BUDGET = 0.02


def read_reply_inline(streams: StreamReader, response: requests.Response, request_id: Any, resumable: bool,
                      max_bytes: int) -> bool:
    """Read a POST reply stream in the caller's thread while its bytes come promptly.

    Waits at most :data:`_INLINE_WAIT` for each next segment and
    :data:`_INLINE_BUDGET` in all, so ``send`` stays short: the usual quick
    reply (headers, event and end of stream within a few segments) costs no
    thread switch, and its messages are delivered in order as they are read
    (through :meth:`StreamReader.take`, the plain path's own parsing).
    Anything else (a slow reply, a stream that stays open, a failure) goes on
    in a reader thread from where this left off.

    :returns: whether the stream was read to its end with the reply in it
        (else a reader thread now owns *response*).
    """
    state = ReplyState(SSEParser(max_bytes, typed_without_data=True))
    # urllib3's raw response; absent (or a compressed body, decoded by iter_body): the plain path
    read1 = None if common.encoding(response) else getattr(response.raw, "read1", None)
    deadline = time.monotonic() + _INLINE_BUDGET
    try:
        while read1 is not None and time.monotonic() < deadline \
                and common.readable_soon(response, _INLINE_WAIT):
            chunk = read1(_CHUNK)
            if not chunk:
                state.ended = True
                break
            state.got = streams.take(chunk, state.parser, request_id, state.odd, state.got)
    except (MessageTooLarge, Dialect) as exc:
        state.error = exc
    except Exception as exc:  # noqa: BLE001 - the reader thread reports the broken stream
        log.debug("SSE stream broke: %s", common.redact_text(str(exc)))
        state.ended = True
    if state.ended and state.got:
        response.close()
        return True
    streams.finish_in_thread(response, request_id, resumable, state)
    return False
