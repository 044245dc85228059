"""What both HTTP transports share on the wire: requests plumbing, redirects, errors, redaction.

``requests`` is imported by the transports lazily, so that stdio-only users
never pay for it; this module therefore imports it only inside functions.

Redirect policy (RELIABILITY F1): ``requests`` strips only ``Authorization``
when a redirect changes host, and forwards every custom header, session ids
included.  So we never let ``requests`` follow redirects: :func:`http_request`
follows at most :data:`MAX_REDIRECTS` hops itself, and only when the target has
the same origin (scheme, host, port) as the URL we were given; 301/302/303 are
followed for GET only (``requests`` would turn a POST into a bodiless GET).
Anything else raises :class:`~mcpsync.exceptions.HTTPStatusError` with the 3xx
status, and nothing is sent to the other origin.
"""

from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from mcpsync.exceptions import ConnectionClosed, HTTPAuthError, HTTPStatusError, excerpt
from mcpsync.transports.http.body import bound_next_read, encoding, iter_body, read_body, read_error_body, release
from mcpsync.transports.redact import redact_text, redact_url
from mcpsync.transports.http.interrupt import socket_of
from mcpsync.transports.retry_after import parse_retry_after

if TYPE_CHECKING:  # pragma: no cover - typing only
    import requests

    from mcpsync.rpc.deadline import Deadline
    from mcpsync.transports.http.fast_send import Sender

__all__ = ["MAX_REDIRECTS", "RedactedCause", "connection_error", "encoding", "finish_if_ready",
           "http_request", "is_event_stream", "is_json", "iter_body", "origin", "read_body",
           "read_error_body", "redact_text", "redact_url", "release", "sanitized", "socket_of", "bound_next_read",
           "status_error"]

log = logging.getLogger(__name__)

MAX_REDIRECTS = 5
_BODY_EXCERPT = 300
_ALWAYS_FOLLOW = frozenset({307, 308})
_GET_FOLLOW = frozenset({301, 302, 303})

_TAGS = re.compile(r"<[^>]*>")
_SPACES = re.compile(r"\s+")


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of *url*, with the scheme's default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


class RedactedCause(Exception):
    """Stands in for a ``requests`` error as ``__cause__``: same story, URLs' queries masked.

    The original's text (shown in every logged traceback) may carry a URL with
    a token in its query string.
    """


def sanitized(exc: BaseException) -> RedactedCause:
    """A :class:`RedactedCause` telling what *exc* said, with secrets masked."""
    return RedactedCause(f"{type(exc).__name__}: {redact_text(excerpt(str(exc), 500))}")


# Request headers whose values are protocol plumbing, not credentials.
_PLAIN_HEADERS = frozenset({
    "accept", "accept-encoding", "connection", "content-length", "content-type", "host",
    "user-agent", "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id",
})


def _own_secrets(response: requests.Response) -> list[str]:
    """Values we sent (credentials, session id, URL query values) that a server might echo."""
    request = getattr(response, "request", None)
    if request is None:
        return []
    values = [str(value) for name,
              value in (request.headers or {}).items() if name.lower() not in _PLAIN_HEADERS and len(str(value)) >= 8]
    # "Bearer <token>": the token alone may be echoed too.
    values += [v.split(None, 1)[1] for v in values if " " in v]
    query = urlsplit(request.url or "").query
    values += [part.split("=", 1)[1] for part in query.split("&") if "=" in part]
    return sorted({v for v in values if len(v) >= 8}, key=len, reverse=True)


def _body_excerpt(response: requests.Response, raw: bytes | None = None) -> str:
    if raw is None:
        raw = read_error_body(response, 4096)
    text = raw.decode("utf-8", errors="replace")
    ctype = response.headers.get("Content-Type", "")
    if "html" in ctype.lower() or text.lstrip().startswith("<"):
        text = _TAGS.sub(" ", text)
    text = _SPACES.sub(" ", text).strip()
    for secret in _own_secrets(response):
        # A server may echo what we sent it, unlabelled: mask our own values.
        text = text.replace(secret, "[redacted]")
    return excerpt(redact_text(text), _BODY_EXCERPT)


def status_error(response: requests.Response, what: str, *, raw: bytes | None = None) -> HTTPStatusError:
    """An :class:`HTTPStatusError` for a non-success *response* (body excerpt redacted).

    A JSON-RPC error in the body is named in the message, so a server's
    "Unsupported protocol version" is not lost behind the status.  A 401/403
    (one that reaches us was resolved by no auth handler) is an
    :class:`~mcpsync.exceptions.HTTPAuthError`.

    :param raw: the body, when the caller has already read it.
    """
    body = _body_excerpt(response, raw[:4096] if raw is not None else None)
    message = what
    try:
        parsed = json.loads(body) if body.startswith("{") else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        err = parsed["error"]
        message += f"; server said: [{err.get('code')}] {excerpt(err.get('message'), 150)}"
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    cls = HTTPAuthError if response.status_code in (401, 403) else HTTPStatusError
    return cls(response.status_code, message, body_excerpt=body, retry_after=retry_after)


def never_connected(exc: BaseException) -> bool:
    """Whether a ``requests`` failure happened before a connection existed (nothing was sent).

    A refused or timed-out connect proves the server never saw the request, so
    it may be retried whatever it does (:mod:`mcpsync.client.retry`).
    """
    import requests
    import urllib3.exceptions

    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    # NewConnectionError (refused, unreachable) derives from ConnectTimeoutError.
    return isinstance(reason, urllib3.exceptions.ConnectTimeoutError)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """*exc* and what it wraps: ``requests`` keeps urllib3's error in ``args``, urllib3 in ``reason``."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [c for c in (current.__cause__, current.__context__, getattr(current, "reason", None),
                             *current.args) if isinstance(c, BaseException)]


def _network_reason(exc: BaseException) -> tuple[str, bool] | None:
    """What went wrong in words, and whether the request may have been sent; ``None``: unknown."""
    import ssl

    for cause in _causes(exc):
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused (is the server running, and is that the right port?)", False
        if isinstance(cause, socket.gaierror):
            return "cannot resolve the host name", False
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS certificate verification failed: {cause.verify_message}", False
        if isinstance(cause, ConnectionResetError):
            return "the server reset the connection", True
    return None


def _cut(text: str, limit: int) -> str:
    """*text* up to about *limit* characters, cut at a word boundary."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head) + f" ... ({len(text) - len(head)} more chars)"


def connection_error(exc: BaseException, what: str, *, outcome_unknown: bool = False) -> ConnectionClosed:
    """A :class:`ConnectionClosed` describing *exc* without leaking URLs' queries.

    A refused connection, an unknown host or a bad certificate is said in
    words (and the request is known not to have been sent); anything else
    shows the exception's own text, cut at a word boundary.
    """
    known = _network_reason(exc)
    if known is not None:
        reason, sent = known
        return ConnectionClosed(f"{what}: {reason}", outcome_unknown=outcome_unknown and sent)
    detail = redact_text(_cut(" ".join(str(exc).split()), 300))
    return ConnectionClosed(f"{what}: {type(exc).__name__}: {detail}", outcome_unknown=outcome_unknown)


def http_request(sender: Sender, method: str, url: str, *, headers: Mapping[str, str],
                 timeout: tuple[float, float | None], data: bytes | None = None, follow_redirects: bool = True,
                 deadline: Deadline | None = None) -> requests.Response:
    """One HTTP exchange with our redirect policy; raises ``requests`` exceptions as they come.

    :param deadline: the call's deadline: it bounds each hop's timeouts, and the auth handler
        gets it (see ``Sender.send``).

    :raises HTTPStatusError: for a redirect we do not follow (the 3xx status).
    """
    current = url
    for hop in range(MAX_REDIRECTS + 1):
        left = None if deadline is None else deadline.remaining()
        if left is not None:  # every hop within what is left, not the first hop's share again
            if hop and not left:
                import requests

                raise requests.exceptions.Timeout(f"no time left to follow the redirect to {redact_url(current)}")
            timeout = (min(timeout[0], left), left if timeout[1] is None else min(timeout[1], left))
        response = sender.send(method, current, headers=headers, timeout=timeout, data=data, deadline=deadline)
        status = response.status_code
        if not (300 <= status < 400) or "Location" not in response.headers:
            return response
        target = urljoin(current, response.headers["Location"])
        followable = status in _ALWAYS_FOLLOW or (method == "GET" and status in _GET_FOLLOW)
        response.close()
        start = origin(url)
        if not follow_redirects or not followable or origin(target) != start:
            reason = "redirects are disabled" if not follow_redirects else (
                "redirect to another origin refused" if origin(target) != start
                else "a redirect that would change the method was refused")
            raise HTTPStatusError(status, f"{reason} ({redact_url(current)} -> {redact_url(target)})")
        log.debug("following %s redirect to %s", status, redact_url(target))
        current = target
    raise HTTPStatusError(status, f"more than {MAX_REDIRECTS} redirects from {redact_url(url)}")


def finish_if_ready(response: requests.Response) -> None:
    """Read the rest of a stream whose reply is in, if its bytes come at once.

    A stream read to its end hands its connection back to the pool; one the server keeps
    open a moment longer (the official SDK's ~44 ms) is left for the caller to close (a
    new connection next time, and no wait now).
    """
    read1 = getattr(response.raw, "read1", None)
    sock = socket_of(response)  # the body is not read to its end: the connection is still ours
    if read1 is None or sock is None or encoding(response):
        return
    try:
        sock.settimeout(0.001)
        while read1(65536):
            pass
    except Exception:  # noqa: BLE001 - the reply is in; what follows is not wanted
        pass


def is_event_stream(response: requests.Response) -> bool:
    """Whether the response body is ``text/event-stream``."""
    return response.headers.get("Content-Type", "").split(";")[0].strip().lower() == "text/event-stream"


def is_json(response: requests.Response) -> bool:
    """Whether the response body is JSON (``application/json`` or ``+json``)."""
    ctype = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    return ctype == "application/json" or ctype.endswith("+json")
