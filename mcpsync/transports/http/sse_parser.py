"""An incremental, WHATWG-conformant ``text/event-stream`` parser.

Why not sseclient-py: 1.9.0 dispatches no event without ``data`` (an
``id:``-only or ``retry:``-only event is lost, and MCP's "``retry`` before
closing" signal with it), keeps no ``lastEventId`` across events, passes
``retry: abc`` through, keeps a NUL-containing id, drops the first event after a
BOM, dispatches a truncated final event at EOF, and re-concatenates its buffer
per chunk (quadratic on multi-megabyte events).  ``docs/transports.rst`` and
``tests/test_http_sse_parser.py`` show each gap.

The parser follows the "event stream interpretation" of the HTML standard:

* lines end at CRLF, LF or CR (a CR at the end of a chunk is a line end; an LF
  that starts the next chunk is then skipped), a leading UTF-8 BOM is dropped;
* ``data`` lines are joined with ``\\n``; exactly one space after the colon is
  stripped; comments (``:``) and unknown fields are ignored;
* ``id`` sets the last event id even for an event without data, an empty
  ``id`` clears it, an id containing NUL is ignored;
* ``retry`` is taken only when it is all ASCII digits;
* an event is dispatched only on a blank line, so a truncated last event is
  discarded at EOF.

Work is linear in the input: each byte is scanned once for line ends and data
lines are joined once, at dispatch.  ``max_event_bytes`` caps one event.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from mcpsync.exceptions import MessageTooLarge

__all__ = ["SSEEvent", "SSEParser"]

_EOL = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


class SSEEvent(NamedTuple):
    """One dispatched event."""

    #: The event type (``"message"`` unless the server named one).
    event: str
    #: The data lines joined with ``\\n``.
    data: str
    #: The last event id at dispatch time (persists across events; ``""`` if none).
    id: str


class SSEParser:
    """Feed bytes in arbitrary chunks; get whole events back.

    ::

        parser = SSEParser()
        for chunk in chunks:
            for event in parser.feed(chunk):
                handle(event.data)

    :param max_event_bytes: the most bytes one event (its lines together) may
        take; beyond it :meth:`feed` raises
        :class:`~mcpsync.exceptions.MessageTooLarge`.
    :param typed_without_data: also dispatch an event that names a type but
        has no data (with ``data == ""``).  WHATWG drops it; the HTTP
        transport wants to see a non-standard ``event: complete`` marker.
    """

    def __init__(self, max_event_bytes: int = 32 * 1024 * 1024, *, typed_without_data: bool = False) -> None:
        if max_event_bytes < 1:
            raise ValueError("max_event_bytes must be positive")
        self._max = max_event_bytes
        self._typed_without_data = typed_without_data
        self._buf = bytearray()
        self._skip_lf = False
        self._first_line = True
        self._data: list[str] = []
        self._event_type = ""
        self._event_bytes = 0
        #: The last event id seen (the value to send as ``Last-Event-ID``).
        self.last_event_id = ""
        #: The reconnection delay the server asked for, in milliseconds, or ``None``.
        self.retry: int | None = None
        #: Comment lines seen (keep-alives): liveness without dispatch.
        self.comments = 0
        #: Whether any ``id`` field was seen (even one that cleared the id).
        self.saw_id = False
        #: Events dispatched with non-empty data (progress, unlike a priming event).
        self.messages = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse *chunk* and return the events it completed, in order.

        :raises MessageTooLarge: when one event exceeds ``max_event_bytes``.
        """
        if not chunk:
            return []
        buf = self._buf
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        # Only the new bytes can hold a line end: the remainder had none.
        start = len(buf)
        buf += chunk
        events: list[SSEEvent] = []
        pos = 0
        for match in _EOL.finditer(buf, start):
            line_end, next_pos = match.span()
            if match.group() == b"\r" and next_pos == len(buf):
                # A CR that ends the chunk: if the next chunk starts with LF it
                # belongs to this line end.
                self._skip_lf = True
            self._line(bytes(buf[pos:line_end]), events)
            pos = next_pos
        if pos:
            del buf[:pos]
        if self._event_bytes + len(buf) > self._max:
            self._reset_event()
            buf.clear()
            raise MessageTooLarge(f"server-sent event larger than {self._max} bytes")
        return events

    def _line(self, raw: bytes, events: list[SSEEvent]) -> None:
        if self._first_line:
            self._first_line = False
            raw = raw.removeprefix(_BOM)
        if not raw:
            self._dispatch(events)
            return
        self._event_bytes += len(raw) + 1
        if self._event_bytes > self._max:
            self._reset_event()
            raise MessageTooLarge(f"server-sent event larger than {self._max} bytes")
        if raw[:1] == b":":
            self.comments += 1
            return
        line = raw.decode("utf-8", errors="replace")
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
                self.saw_id = True
        elif name == "retry":
            if value and value.isascii() and value.isdigit():
                self.retry = int(value)

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._data or (self._typed_without_data and self._event_type):
            self.messages += any(self._data)
            events.append(SSEEvent(self._event_type or "message", "\n".join(self._data), self.last_event_id))
        self._reset_event()

    def _reset_event(self) -> None:
        self._data = []
        self._event_type = ""
        self._event_bytes = 0
