"""Bounded HTTP exchanges with an authorization server: the timeouts and :func:`post_json`.

Every request the auth package makes has the same connect/read timeouts and reads at most
:data:`MAX_JSON_BYTES` of the answer, so a hostile or broken server cannot hang a login or
fill the memory.  (The GETs of discovery, which also follow redirects under the URL policy,
are :func:`mcpsync.auth._discovery.fetch_json`.)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from . import _deadline
from ._errors import AuthError

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["MAX_DISCARD_BYTES", "MAX_JSON_BYTES", "TIMEOUT", "discard", "post_json"]

#: (connect, read) seconds for every request to an authorization server.
TIMEOUT = (10.0, 20.0)
#: The most of a JSON answer (metadata, registration, token) read from a server.
MAX_JSON_BYTES = 1 << 20
#: The most of a refused response's body read before the request is sent again.
MAX_DISCARD_BYTES = 64 * 1024


def discard(response: requests.Response, limit: int = MAX_DISCARD_BYTES) -> None:
    """Read and drop *response*'s body, at most *limit* bytes, and close it.

    A short body (the usual 401) is read to its end, so its connection can carry the
    request again; a longer one (a hostile server's endless body) is read no further: its
    connection is closed instead.  Nothing is decoded (a compressed body cannot inflate).
    """
    raw = response.raw
    try:
        rest = raw.read(limit + 1, decode_content=False) if raw is not None else b""
    except Exception:  # noqa: BLE001 - a body that cannot be read is dropped with its connection
        rest = b"\0" * (limit + 1)
    if len(rest) > limit and raw is not None:
        raw.close()
    response._content, response._content_consumed = b"", True  # type: ignore[attr-defined]
    response.close()


def post_json(
    session: requests.Session, url: str, what: str, error: type[AuthError], **kwargs: Any
) -> tuple[requests.Response, dict[str, Any]]:
    """POST (no redirects) and read a JSON object of at most :data:`MAX_JSON_BYTES`.

    :param what: names the request in the error (``"token request"``).
    :param error: raised, with only the exception's class name, when the request fails.
    :param kwargs: for ``session.post`` (``data=``, ``json=``, ``headers=``, ...).
    :returns: the response (closed) and the object, or ``{}`` when the body is not one.
    :raises ~mcpsync.exceptions.RequestTimeout: the deadline of the call that triggered this
        request (:mod:`._deadline`) passed first.
    """
    import requests as _requests
    from urllib3.exceptions import HTTPError as _ReadError

    headers = {"Accept": "application/json", **kwargs.pop("headers", {})}
    try:
        response = session.post(
            url,
            headers=headers,
            timeout=_deadline.bounded(TIMEOUT, what),
            allow_redirects=False,
            stream=True,
            **kwargs,
        )
        with response:
            raw = response.raw.read(MAX_JSON_BYTES, decode_content=True)
    except (_requests.RequestException, _ReadError, OSError) as exc:
        if _deadline.passed():
            raise _deadline.expired(what) from None
        raise error(f"{what} failed ({type(exc).__name__})") from None
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        data = {}
    return response, data if isinstance(data, dict) else {}
