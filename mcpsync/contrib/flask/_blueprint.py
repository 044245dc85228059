"""The pages of :mod:`mcpsync.contrib` on the ``mcpsync`` blueprint (``/mcp/...``).

The same pages as the Django views: ``GET connect/<server>?next=``,
``GET callback/<server>`` (``state`` and ``iss`` checked; a forged, replayed
or stale callback is a 400), ``POST disconnect/<server>``; and the MCP Apps host
pages (docs/apps.rst): ``GET apps/<server>/<tool>/?arguments=<JSON>``
(``mcpsync.app``), ``POST apps/<server>/call/`` (``mcpsync.app_call``, the app's
``tools/call`` with ``caller="app"``), ``GET apps/sandbox/`` (``mcpsync.app_sandbox``,
answered only on ``MCP_APPS_SANDBOX_ORIGIN``).  Every request other than GET, HEAD and
OPTIONS must carry the session's CSRF token (:mod:`._csrf`; templates get it as
``mcp_csrf_token()``, the Apps bridge sends it back in ``X-CSRFToken``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flask
from itsdangerous import BadSignature, URLSafeSerializer

from .. import _useroauth as login
from .. import apps as host
from .._web import SANDBOX_SALT, Reply, Web
from ._csrf import CSRF_HEADER, check_csrf, csrf_token

#: Where ``MCP.init_app`` puts the extension, in ``app.extensions``.
EXTENSION_KEY = "mcp.ext"

blueprint = flask.Blueprint("mcpsync", __name__)
blueprint.add_app_template_global(csrf_token, "mcp_csrf_token")


@blueprint.before_request
def _csrf() -> None:
    """A cross-site form must not change anything: state-changing requests carry the token."""
    if flask.request.method not in ("GET", "HEAD", "OPTIONS"):
        check_csrf()


def web() -> Web:
    """The pages' view of the current Flask request."""
    request, mcp = flask.request, flask.current_app.extensions.get(EXTENSION_KEY)
    if mcp is None:
        raise RuntimeError("MCP.init_app() was not called for this app")
    return Web(
        method=request.method, url=request.url, full_path=request.full_path,
        args=request.form if request.method == "POST" else request.args, session=flask.session,
        servers=mcp._servers, setting=flask.current_app.config.get,
        reverse=lambda name, **kwargs: flask.url_for(f"mcpsync.{name.replace('-', '_')}", **kwargs),
        oauth_for_user=mcp.oauth_for_user,
        sign=lambda payload: str(_signer().dumps(payload)), unsign=_unsign,
        csrf=lambda: (CSRF_HEADER, csrf_token()), not_found=lambda why: flask.abort(404, description=why),
    )


def _signer() -> URLSafeSerializer:
    if not flask.current_app.secret_key:
        raise RuntimeError("the MCP Apps pages need the app's SECRET_KEY (sessions, signed sandbox links)")
    return URLSafeSerializer(flask.current_app.secret_key, salt=SANDBOX_SALT)


def _unsign(text: str) -> Any:
    try:
        return _signer().loads(text)
    except BadSignature:
        return None


def respond(reply: Reply) -> Any:
    """*reply* as Flask's response."""
    if reply.status == 302:
        return flask.redirect(reply.headers["Location"])
    if isinstance(reply.body, str):
        response = flask.Response(reply.body, reply.status, mimetype="text/html")
    else:
        response = flask.jsonify(reply.body)
        response.status_code = reply.status
    response.headers.update(reply.headers)
    return response


def _route(rule: str, endpoint: str, page: Callable[..., Reply], method: str = "GET") -> None:
    blueprint.add_url_rule(rule, endpoint, lambda **kwargs: respond(page(web(), **kwargs)), methods=[method])


_route("/connect/<server>", "connect", login.connect)
_route("/callback/<server>", "callback", login.callback)
_route("/disconnect/<server>", "disconnect", login.disconnect, "POST")
_route("/apps/<server>/<tool>/", "app", host.app_page)
_route("/apps/<server>/call/", "app_call", lambda web, server: host.app_call(web, server, flask.request.get_data()),
       "POST")
_route("/apps/sandbox/", "app_sandbox", host.sandbox_page)
