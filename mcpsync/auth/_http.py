"""Bounded HTTP exchanges with an authorization server: :func:`send` and what builds on it.

Every request the auth package makes goes through :func:`send`: the same connect/read
timeouts cut to the calling request's deadline, no redirect followed (discovery follows
them by hand, each hop checked), and at most :data:`MAX_JSON_BYTES` of the answer read, so
a hostile or broken server cannot hang a login or fill the memory.
"""

from __future__ import annotations

import json
from typing import Any

import requests
from urllib3.exceptions import HTTPError as _ReadError

from ..exceptions import excerpt
from . import _deadline
from ._errors import AuthError, TokenRequestError


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


def send(session: requests.Session, method: str, url: str, what: str, error: type[AuthError], **kwargs: Any
         ) -> tuple[requests.Response, bytes]:
    """One request; the response (closed) and at most ``MAX_JSON_BYTES + 1`` bytes of its body.

    :param what: names the request in the error (``"token request"``).
    :param error: raised, with only the exception's class name, when the request fails.
    :param kwargs: for ``session.request`` (``data=``, ``json=``, ``headers=``, ...).
    :raises ~mcpsync.exceptions.RequestTimeout: the deadline of the call that triggered this
        request (:mod:`._deadline`) passed first.
    """
    headers = {"Accept": "application/json", **kwargs.pop("headers", {})}
    try:
        response = session.request(
            method, url, headers=headers, timeout=_deadline.bounded(TIMEOUT, what), allow_redirects=False,
            stream=True, **kwargs,
        )
        with response:
            return response, response.raw.read(MAX_JSON_BYTES + 1, decode_content=True)
    except (requests.RequestException, _ReadError, OSError) as exc:
        if _deadline.passed():
            raise _deadline.expired(what) from None
        raise error(f"{what} failed ({type(exc).__name__})") from None


def json_object(body: bytes) -> dict[str, Any] | None:
    """*body* as a JSON object (``None``: not one)."""
    try:
        data = json.loads(body) if body else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def post_json(session: requests.Session, url: str, what: str, error: type[AuthError], **kwargs: Any
              ) -> tuple[requests.Response, dict[str, Any]]:
    """POST with :func:`send`; the response and its JSON object (``{}``: none, or too large)."""
    response, body = send(session, "POST", url, what, error, **kwargs)
    return response, (json_object(body) if len(body) <= MAX_JSON_BYTES else None) or {}


def error_code(body: dict[str, Any]) -> str | None:
    """The OAuth ``error`` code of an answer, if it has one."""
    return code if isinstance(code := body.get("error"), str) else None


def check_token(response: requests.Response, body: dict[str, Any], what: str) -> None:
    """:raises TokenRequestError: *response* issued no token (a refusal, with its ``error`` code)."""
    status = response.status_code
    if status != 200 or not isinstance(body.get("access_token"), str):
        code = error_code(body)
        # error_description is server text: never shown; the code only as a short excerpt.
        raise TokenRequestError(f"{what} refused: HTTP {status}" + (f" {excerpt(code, 60)}" if code else ""),
                                error=code, status=status)
