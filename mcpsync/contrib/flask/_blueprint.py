""""Connect this server" and the OAuth callback for the current user (``/mcp/...``).

The same three routes as the Django views: ``GET connect/<server>?next=``,
``GET callback/<server>`` (``state`` and ``iss`` checked; a forged, replayed
or stale callback is a 400), ``POST disconnect/<server>``.
"""

from __future__ import annotations

import logging
from typing import Any

import flask

from ...exceptions import McpError
from .._useroauth import finish_login, is_safe_next

__all__ = ["blueprint"]

log = logging.getLogger("mcpsync.contrib")

blueprint = flask.Blueprint("mcpsync", __name__)


def _oauth(server: str) -> Any:
    """The current user's OAuth for *server*; a 404 for a server that is not a per-user one."""
    from ._ext import extension

    mcp = extension()
    if server not in mcp or mcp.spec(server).oauth is None:
        flask.abort(404)
    return mcp.oauth_for_user(server)


def _remember_next(target: str | None) -> None:
    from ._ext import NEXT_KEY

    if is_safe_next(target):
        flask.session[NEXT_KEY] = target


def _after_login() -> Any:
    from ._ext import NEXT_KEY

    target = flask.session.pop(NEXT_KEY, None)
    if not is_safe_next(target):
        target = flask.current_app.config.get("MCP_LOGIN_REDIRECT_URL", "/")
    return flask.redirect(target)


@blueprint.get("/connect/<server>")
def connect(server: str) -> Any:
    """Redirect the user to the server's authorization page."""
    _remember_next(flask.request.args.get("next"))
    try:
        url = _oauth(server).begin()
    except McpError as exc:
        log.warning("MCP server %r: %s: %s", server, type(exc).__name__, exc)
        return f"the MCP server {server!r} cannot be reached for a login ({type(exc).__name__})", 502
    return flask.redirect(url)


@blueprint.get("/callback/<server>")
def callback(server: str) -> Any:
    """Finish the login this callback belongs to (this user's, with this ``state``)."""
    failed = finish_login(_oauth(server), flask.request.url)
    if failed is not None:
        status, text = failed
        return text, status, {"Content-Type": "text/plain; charset=utf-8"}
    return _after_login()


@blueprint.post("/disconnect/<server>")
def disconnect(server: str) -> Any:
    """Forget the current user's tokens for *server*."""
    _oauth(server).logout()
    _remember_next(flask.request.form.get("next"))
    return _after_login()
