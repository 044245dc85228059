"""The MCP Apps host pages (docs/apps.rst) on the ``mcpsync`` blueprint, beside the login routes.

* ``GET apps/<server>/<tool>/?arguments=<JSON>`` (``mcpsync.app``): the tool's app for the
  current user;
* ``POST apps/<server>/call/`` (``mcpsync.app_call``): the app's ``tools/call``,
  ``caller="app"``, behind a CSRF check;
* ``GET apps/sandbox/`` (``mcpsync.app_sandbox``): the sandbox proxy, answered only on
  ``MCP_APPS_SANDBOX_ORIGIN``.

The call is a POST of the blueprint, so its CSRF check is the blueprint's (:mod:`._csrf`):
the bridge sends the session's token back in ``X-CSRFToken``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import flask
from itsdangerous import BadSignature, URLSafeSerializer

from .. import apps as host
from ._blueprint import EXTENSION_KEY, blueprint
from ._csrf import CSRF_HEADER, csrf_token

_SALT = "mcpsync.contrib.apps.sandbox"


def _client(server: str) -> Any:
    """The current user's client for *server* (their own for an ``oauth`` server), in a ``with``."""
    mcp = flask.current_app.extensions.get(EXTENSION_KEY)
    if mcp is None:
        raise RuntimeError("MCP.init_app() was not called for this app")
    if server not in mcp:
        flask.abort(404)
    if mcp.spec(server).oauth is None:
        return contextlib.nullcontext(mcp.get_client(server))
    return contextlib.closing(mcp.client_for_user(server))  # connects in the call, not here


def _respond(reply: host.Reply) -> flask.Response:
    if isinstance(reply.body, str):
        response = flask.Response(reply.body, reply.status, mimetype="text/html")
    else:
        response = flask.jsonify(reply.body)
        response.status_code = reply.status
    response.headers.update(reply.headers)
    return response


def _signer() -> URLSafeSerializer:
    return URLSafeSerializer(flask.current_app.secret_key or "", salt=_SALT)


def _sandbox_setting() -> Any:
    return flask.current_app.config.get("MCP_APPS_SANDBOX_ORIGIN")


@blueprint.get("/apps/<server>/<tool>/")
def app(server: str, tool: str) -> Any:
    """The host page of *tool*'s app; a 404 for a tool without a UI."""
    origin = host.origin_of(flask.request.host_url)
    sandbox = host.sandbox_origin(_sandbox_setting(), origin)
    if not flask.current_app.secret_key:
        raise RuntimeError("the MCP Apps pages need the app's SECRET_KEY (sessions, signed sandbox links)")
    path = flask.url_for("mcpsync.app_sandbox")
    token = csrf_token()
    with _client(server) as client:
        return _respond(host.app_page(
            client, server, tool, flask.request.args.get("arguments"), host_origin=origin, sandbox=sandbox,
            sandbox_url=lambda payload: f"{sandbox}{path}?s={_signer().dumps(payload)}",
            call_url=flask.url_for("mcpsync.app_call", server=server), csrf=(CSRF_HEADER, token),
        ))


@blueprint.post("/apps/<server>/call/")
def app_call(server: str) -> Any:
    """A ``tools/call`` from an app of *server* (the blueprint checked its CSRF token)."""
    with _client(server) as client:
        return _respond(host.app_call(client, server, flask.request.get_data()))


@blueprint.get("/apps/sandbox/")
def app_sandbox() -> Any:
    """The sandbox proxy page, on the sandbox origin only."""
    if host.origin_of(flask.request.host_url) != host.origin_of(str(_sandbox_setting() or "")):
        flask.abort(404)
    try:
        payload = _signer().loads(flask.request.args.get("s", ""))
    except BadSignature:
        payload = None
    return _respond(host.sandbox_page(payload))
