""""Connect this server" and the OAuth callback for the current user (``/mcp/...``).

The same three routes as the Django views: ``GET connect/<server>?next=``,
``GET callback/<server>`` (``state`` and ``iss`` checked; a forged, replayed
or stale callback is a 400), ``POST disconnect/<server>``.  Every request
other than GET, HEAD and OPTIONS must carry the session's CSRF token
(:mod:`._csrf`; templates get it as ``mcp_csrf_token()``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import flask

from ...auth import OAuth
from .._server_set import ServerSpec
from .._useroauth import finish_login, is_safe_next, login_url
from ._csrf import check_csrf, csrf_token

#: Where ``MCP.init_app`` puts the extension, in ``app.extensions``.
EXTENSION_KEY = "mcp.ext"
#: The session key of the page to return to after a login.
NEXT_KEY = "mcpsync.next"

blueprint = flask.Blueprint("mcpsync", __name__)
blueprint.add_app_template_global(csrf_token, "mcp_csrf_token")


@blueprint.before_request
def _csrf() -> None:
    """A cross-site form must not change anything: state-changing requests carry the token."""
    if flask.request.method not in ("GET", "HEAD", "OPTIONS"):
        check_csrf()


@runtime_checkable
class _Servers(Protocol):
    """What these routes need of the app's ``MCP`` extension (it registers them)."""

    def __contains__(self, name: object) -> bool: ...

    def spec(self, name: str) -> ServerSpec: ...

    def oauth_for_user(self, name: str) -> OAuth: ...


def _oauth(server: str) -> OAuth:
    """The current user's OAuth for *server*; a 404 for a server that is not a per-user one."""
    mcp = flask.current_app.extensions.get(EXTENSION_KEY)
    if not isinstance(mcp, _Servers):
        raise RuntimeError("MCP.init_app() was not called for this app")
    if server not in mcp or mcp.spec(server).oauth is None:
        flask.abort(404)
    return mcp.oauth_for_user(server)


def _remember_next(target: str | None) -> None:
    if is_safe_next(target):
        flask.session[NEXT_KEY] = target


def _after_login() -> Any:
    target = flask.session.pop(NEXT_KEY, None)
    if not is_safe_next(target):
        target = flask.current_app.config.get("MCP_LOGIN_REDIRECT_URL", "/")
    return flask.redirect(target)


@blueprint.get("/connect/<server>")
def connect(server: str) -> Any:
    """Redirect the user to the server's authorization page."""
    _remember_next(flask.request.args.get("next"))
    status, url_or_text = login_url(_oauth(server), server)
    return flask.redirect(url_or_text) if status == 302 else (url_or_text, status)


@blueprint.get("/callback/<server>")
def callback(server: str) -> Any:
    """Finish the login this callback belongs to (this user's, with this ``state``)."""
    failed = finish_login(_oauth(server), flask.request.url)
    if failed is not None:
        return failed[1], failed[0], {"Content-Type": "text/plain; charset=utf-8"}
    return _after_login()


@blueprint.post("/disconnect/<server>")
def disconnect(server: str) -> Any:
    """Forget the current user's tokens for *server*."""
    _oauth(server).logout()
    _remember_next(flask.request.form.get("next"))
    return _after_login()
