"""``Retry-After``: the header of a 429 or 503, as seconds to wait.

RFC 9110 (section 10.2.3) allows two forms, ``delay-seconds`` (``120``) and an
HTTP-date (``Wed, 21 Oct 2026 07:28:00 GMT``); servers and proxies send both.
Both HTTP transports and the WebSocket upgrade read it here.

May import: the standard library only.
"""

from __future__ import annotations

import time

__all__ = ["parse_retry_after"]


def parse_retry_after(value: object, *, now: float | None = None) -> float | None:
    """Seconds to wait, from a ``Retry-After`` header value.

    :param now: the current time (``time.time()``), for a date.
    :returns: ``None`` when the value is absent or neither form; ``0.0`` for a
        date already past; ``inf`` for a number too large to mean anything (the
        retry policy then does not honour it).
    """
    if not isinstance(value, str):
        return None
    text = value.strip()  # "" is neither form: the date parser refuses it
    if text.isascii() and text.isdigit():
        return float(text)  # float(), not int(): no digit limit, a huge value is inf
    if not text.isascii() or len(text) > 64:
        return None
    # Only a date pays for importing email.utils (a stdio client never does).
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, by RFC 5322
        from datetime import timezone

        when = when.replace(tzinfo=timezone.utc)
    try:
        stamp = when.timestamp()
    except (OverflowError, OSError, ValueError):
        return None
    return max(0.0, stamp - (time.time() if now is None else now))
