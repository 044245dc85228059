"""A Flask app that calls an OAuth-protected MCP server on behalf of each of its users.

The web-app flow of :class:`mcpsync.auth.OAuth`: no browser to open and no
loopback listener; the user's browser is redirected to the authorization
server and comes back to this app's own ``/oauth/callback``.  Tokens are kept
per user in a :class:`~mcpsync.auth.FileTokenStore` shared by every worker
process, so the callback may land on another worker than the redirect.

Run it with::

    MCP_URL=https://mcp.example.com/mcp MCP_TOKEN_DIR=/var/lib/my-app/mcp-tokens \\
    FLASK_SECRET_KEY=... flask --app examples/flask_oauth_app.py run

``tests/test_auth_flask_example.py`` runs it with Flask's test client against a
real authorization server and MCP server.
"""

from __future__ import annotations

import os
import secrets

import flask

import mcpsync
from mcpsync.auth import (
    AuthorizationRequired,
    FileTokenStore,
    OAuth,
    StateMismatchError,
)


def create_app(
    mcp_url: str | None = None,
    token_dir: str | None = None,
    secret_key: str | None = None,
) -> flask.Flask:
    """The app; arguments default to ``MCP_URL``, ``MCP_TOKEN_DIR`` and ``FLASK_SECRET_KEY``."""
    app = flask.Flask(__name__)
    app.secret_key = secret_key or os.environ["FLASK_SECRET_KEY"]
    server_url = mcp_url or os.environ["MCP_URL"]
    store = FileTokenStore(token_dir or os.environ["MCP_TOKEN_DIR"])

    def current_user_id() -> str:
        # Stands in for your own login system: one anonymous user per browser session.
        return str(flask.session.setdefault("user_id", secrets.token_hex(16)))

    def auth_for(user_id: str) -> OAuth:
        # One OAuth per request, cheap to build; the store holds everything that lasts.
        return OAuth(
            store=store,
            login=None,
            server_url=server_url,
            key=f"{user_id}:{server_url}",  # one record per user and server
            redirect_uri=flask.url_for("mcp_callback", _external=True),
            client_name="flask-oauth-example",
        )

    def call_mcp(fn):  # type: ignore[no-untyped-def]
        """Run *fn(client)*; send the user to log in when the server needs it."""
        try:
            with mcpsync.Client.http(
                server_url, auth=auth_for(current_user_id()), timeout=30
            ) as client:
                return fn(client)
        except AuthorizationRequired as exc:
            flask.session["after_login"] = flask.request.full_path
            return flask.redirect(exc.url)

    @app.get("/tools")
    def tools():  # type: ignore[no-untyped-def]
        return call_mcp(lambda c: {"tools": sorted(t.name for t in c.list_tools())})

    @app.get("/call/<name>")
    def call(name: str):  # type: ignore[no-untyped-def]
        arguments = dict(flask.request.args)
        return call_mcp(lambda c: {"text": c.call_tool(name, arguments).text})

    @app.get("/oauth/callback")
    def mcp_callback():  # type: ignore[no-untyped-def]
        try:
            auth_for(current_user_id()).complete(flask.request.url)
        except StateMismatchError:
            # Forged, replayed or stale: never exchange the code; start a new login.
            return {"error": "this login link is not valid any more; try again"}, 400
        return flask.redirect(flask.session.pop("after_login", None) or "/tools")

    @app.post("/logout")
    def logout():  # type: ignore[no-untyped-def]
        auth_for(current_user_id()).logout()
        return {"ok": True}

    return app
