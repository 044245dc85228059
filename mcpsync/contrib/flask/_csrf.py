"""CSRF protection for the blueprint's state-changing requests, without Flask-WTF.

A per-session token: :func:`csrf_token` makes it (once per session, so it
stays valid across requests, tabs and logins) and :func:`check_csrf` refuses a
request that does not send it back, in the form field ``csrf_token`` or the
header ``X-CSRFToken`` (Flask-WTF's names, so one hidden field serves both).
When Flask-WTF is installed, a valid Flask-WTF token is accepted too.  Any
view of the blueprint reuses these two functions: the blueprint runs
:func:`check_csrf` before every request that is not GET, HEAD or OPTIONS.
"""

from __future__ import annotations

import hmac
import importlib
import secrets

import flask

#: The form field and the header that carry the token back.
CSRF_FIELD, CSRF_HEADER = "csrf_token", "X-CSRFToken"
#: The session key of this session's token.
CSRF_KEY = "mcpsync.csrf"


def csrf_token() -> str:
    """This session's CSRF token, made on first use (``{{ mcp_csrf_token() }}`` in templates)."""
    token = flask.session.get(CSRF_KEY)
    if not isinstance(token, str):
        token = flask.session[CSRF_KEY] = secrets.token_urlsafe(32)
    return token


def check_csrf() -> None:
    """Abort with a 400 unless the request sends this session's token (or a Flask-WTF one)."""
    sent = flask.request.form.get(CSRF_FIELD) or flask.request.headers.get(CSRF_HEADER) or ""
    expected = flask.session.get(CSRF_KEY)
    if isinstance(expected, str) and hmac.compare_digest(sent.encode(), expected.encode()):
        return
    if sent and _flask_wtf_accepts(sent):
        return
    flask.abort(400, description="CSRF token missing or incorrect")


def _flask_wtf_accepts(token: str) -> bool:
    try:
        csrf = importlib.import_module("flask_wtf.csrf")
    except ImportError:
        return False
    try:
        csrf.validate_csrf(token)
    except Exception:  # noqa: BLE001 - wtforms' ValidationError, or Flask-WTF not set up on this app
        return False
    return True
