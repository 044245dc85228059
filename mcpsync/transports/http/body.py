"""Reading HTTP bodies: as the bytes arrive, decoded, and never past a cap.

Every body the HTTP transports read (JSON replies, SSE streams, error bodies)
comes through :func:`iter_body`, in pieces of at most 64 KiB, so whoever reads
holds one piece at a time and stops at its own cap (:func:`read_body` for a
whole body, the SSE parser per event): a 200 MiB reply to a 1 MiB cap costs
about 1 MiB (RELIABILITY F9).

Compression: the transports ask for ``gzip, deflate`` (:data:`ACCEPT_ENCODING`;
``requests`` would also offer ``br``/``zstd`` when their modules happen to be
installed) and decode here, incrementally, each decoded piece at most 64 KiB: a
reader that stops at its cap stops the decompression too, so a decompression
bomb costs no more memory than the cap.  Any other encoding is a
:class:`~mcpsync.exceptions.ProtocolError`.  Nothing here imports ``requests``.
"""

from __future__ import annotations

import socket
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mcpsync.exceptions import MessageTooLarge, ProtocolError, excerpt

if TYPE_CHECKING:  # pragma: no cover
    import requests

    from mcpsync.rpc.deadline import Deadline

__all__ = ["ACCEPT_ENCODING", "bound_next_read", "encoding", "iter_body", "read_body", "read_error_body", "release"]

#: What the HTTP transports send as ``Accept-Encoding``: what :func:`iter_body` decodes.
ACCEPT_ENCODING = "gzip, deflate"
_GZIP = 16 + zlib.MAX_WBITS
_WBITS = {"gzip": _GZIP, "x-gzip": _GZIP, "deflate": zlib.MAX_WBITS}
_CHUNK = 65536


def encoding(response: requests.Response) -> str:
    """The body's content coding, lower-cased (``""`` for none or ``identity``)."""
    coding = response.headers.get("Content-Encoding", "").strip().lower()
    return "" if coding == "identity" else coding


def _raw(response: requests.Response, chunk: int) -> Iterator[bytes]:
    """The body's bytes as they come, undecoded (never waiting to fill a buffer).

    ``read1`` (urllib3 >= 2.3) returns what is available, for chunked,
    length-delimited and close-delimited bodies alike; ``iter_content(128)``
    would hold a small event until more bytes arrive (RELIABILITY C8).
    """
    raw = response.raw
    read1 = getattr(raw, "read1", None)
    if read1 is None:  # urllib3 < 2.3: chunk boundaries, at most *chunk* bytes each
        yield from raw.stream(chunk, decode_content=False)
        return
    while True:
        data = read1(chunk)
        if not data:
            return
        yield data


def _inflate(chunks: Iterator[bytes], wbits: int, piece: int) -> Iterator[bytes]:
    """Decompress *chunks*, yielding at most *piece* bytes at a time."""
    decoder = zlib.decompressobj(wbits)
    started = False
    for data in chunks:
        while True:
            try:
                out = decoder.decompress(data, piece)
            except zlib.error as exc:
                if started or wbits != zlib.MAX_WBITS:
                    raise ProtocolError(f"the server's compressed body could not be decoded ({exc})") from None
                # "deflate" without its zlib header, as some servers send it.
                wbits, decoder = -zlib.MAX_WBITS, zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            started = True
            if out:
                yield out
            data = decoder.unconsumed_tail
            if decoder.eof and decoder.unused_data:  # another gzip member follows
                data, decoder = decoder.unused_data, zlib.decompressobj(wbits)
            elif not data and len(out) < piece:
                break  # this chunk is used up (a full piece may leave output pending)


def iter_body(response: requests.Response, chunk: int = _CHUNK) -> Iterator[bytes]:
    """Yield the decoded body as it arrives, at most *chunk* bytes at a time.

    :raises ProtocolError: for a content coding other than gzip or deflate, or
        a compressed body that does not decode.
    """
    coding = encoding(response)
    if not coding:
        yield from _raw(response, chunk)
        return
    wbits = _WBITS.get(coding)
    if wbits is None:
        raise ProtocolError(f"the server sent a body in an encoding mcpsync does not decode ({excerpt(coding, 40)})")
    yield from _inflate(_raw(response, chunk), wbits, chunk)


#: A read may overrun the call's deadline by this much before its socket timeout is re-armed.
_REARM_SLACK = 0.05


def bound_next_read(response: requests.Response, deadline: Deadline | None, idle: float | None = None) -> None:
    """Make the next read of *response* wait at most what is left of *deadline* (within ~50 ms) and *idle*.

    Only while *response* still holds its connection: once its body has been read to
    the end, ``urllib3`` has put the connection back in the pool, and its socket may
    already be another thread's.  The timeout is re-armed only when the one set earlier
    (by ``urllib3`` at the request, or here) differs by more than 50 ms, so a reply read
    at once costs no call (and progress that moved the deadline later is seen).

    :raises TimeoutError: when *deadline* has passed: the read would time out (a server
        trickling bytes must not keep a call past its end).
    """
    if deadline is None or deadline.end is None:
        return  # the transport's read timeout bounds each read
    left = deadline.remaining(idle)
    if not left:
        raise TimeoutError("the call's deadline passed")
    sock = getattr(getattr(response.raw, "_connection", None), "sock", None)
    if not isinstance(sock, socket.socket):
        return
    current = sock.gettimeout()
    if current is None or abs(current - left) > _REARM_SLACK:
        try:
            sock.settimeout(left)
        except OSError:
            pass  # already closed: the read fails anyway


def read_body(response: requests.Response, limit: int, deadline: Deadline | None = None) -> bytes:
    """The whole decoded body; :class:`MessageTooLarge` as soon as it passes *limit* bytes.

    Each read waits at most what is left of *deadline* (:func:`bound_next_read`).
    """
    length = response.headers.get("Content-Length", "")
    if not encoding(response) and length.isdigit() and int(length) > limit:
        raise MessageTooLarge(f"reply larger than {limit} bytes (Content-Length: {length})")
    parts: list[bytes] = []
    size = 0
    chunks = iter_body(response)
    while True:
        bound_next_read(response, deadline)
        data = next(chunks, b"")
        if not data:
            return b"".join(parts)
        size += len(data)
        if size > limit:
            raise MessageTooLarge(f"reply larger than {limit} bytes")
        parts.append(data)


def read_error_body(response: requests.Response, limit: int = _CHUNK) -> bytes:
    """Up to *limit* bytes of an error response's decoded body (what could be read)."""
    body = b""
    try:
        for data in iter_body(response, min(limit, _CHUNK)):
            body += data
            if len(body) >= limit:
                break
    except Exception:  # noqa: BLE001 - the body is only decoration for the error
        pass
    return body[:limit]


def release(response: requests.Response) -> None:
    """Close *response*, first reading a short body to its end so its connection is reused.

    Closing a streamed response whose body was not read closes its connection
    (one TCP connect per request).  A body longer than 64 KiB is dropped with
    its connection.
    """
    with response:
        read_error_body(response)  # never raises
