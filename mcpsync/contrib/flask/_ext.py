"""The ``MCP`` extension: servers from ``app.config``, per-user clients, the login blueprint and CLI."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import flask

from ...auth import AuthorizationRequired, FileTokenStore, OAuth, TokenStore
from ...config import ConfigError
from .._server_set import NO_KEY_NEEDED, ServerFront, ServerSet, ServerSpec
from .._useroauth import EncryptedTokenStore, ScopedTokenStore, to_login, user_client, user_oauth
from ._blueprint import EXTENSION_KEY, respond, web

if TYPE_CHECKING:
    from ...client.client import Client

#: The session key of an anonymous user's id (:data:`~mcpsync.contrib._useroauth.NEXT_KEY` is the other).
ANON_KEY = "mcpsync.user"


def _default_user_id() -> str:
    """Flask-Login's user when it is installed and someone is logged in, else one id per session."""
    try:
        from flask_login import current_user
    except ImportError:
        current_user = None
    if current_user is not None and getattr(current_user, "is_authenticated", False):
        return f"user:{current_user.get_id()}"
    return f"session:{flask.session.setdefault(ANON_KEY, secrets.token_hex(16))}"


#: ``MCP_TOKEN_STORE`` values (``None``: chosen from the other settings).
TOKEN_STORES = ("file", "sqlalchemy")


@attrs.frozen
class _AppState:
    """What :meth:`MCP.init_app` keeps per app in ``app.extensions["mcp"]``."""

    servers: ServerSet
    #: Makes the store of one user's records (``None``: no server has ``oauth``).
    for_user: Callable[[str], TokenStore] | None


def _scoped(store: TokenStore) -> Callable[[str], TokenStore]:
    return lambda user: ScopedTokenStore(store, user)


def _user_stores(app: flask.Flask, key: Any) -> Callable[[str], TokenStore]:
    """Each user's token store, from ``MCP_TOKEN_STORE`` or, unset, from what the app has.

    :raises ConfigError: no store can be made from the settings.
    """
    from .._cipher import RecordCipher

    config = app.config
    kind = config.get("MCP_TOKEN_STORE")
    if kind is not None and kind not in TOKEN_STORES:
        raise ConfigError(f"MCP_TOKEN_STORE must be one of {', '.join(map(repr, TOKEN_STORES))}, not {kind!r}")
    if kind is None:
        # A token directory is an explicit choice; Flask-SQLAlchemy, the app's own database.
        kind = "file" if config.get("MCP_TOKEN_DIR") else "sqlalchemy" if "sqlalchemy" in app.extensions else None
    if kind == "file":
        directory = config.get("MCP_TOKEN_DIR")
        if not directory:
            raise ConfigError("MCP_TOKEN_STORE = 'file' needs MCP_TOKEN_DIR")
        return _scoped(EncryptedTokenStore(FileTokenStore(directory), RecordCipher(key)))
    if kind == "sqlalchemy":
        db = app.extensions.get("sqlalchemy")
        if db is None:
            raise ConfigError("MCP_TOKEN_STORE = 'sqlalchemy' needs Flask-SQLAlchemy set up first: "
                              "db = SQLAlchemy(app) (or db.init_app(app)) before MCP(app)")
        from .stores import SQLAlchemyTokens

        # The engine is looked up in each request (Flask-SQLAlchemy keeps one per app).
        return SQLAlchemyTokens(lambda: db.engine, RecordCipher(key), metadata=db.metadata).for_user
    raise ConfigError("servers with 'oauth' need a token store: Flask-SQLAlchemy (set up before MCP), "
                      "MCP_TOKEN_DIR (with MCP_TOKEN_KEY), or MCP(token_store=...)")


class MCP(ServerFront):
    """Flask extension: ``mcp = MCP(app)`` or ``mcp = MCP(); mcp.init_app(app)``.

    Reads ``MCP_SERVERS`` (the ``mcpServers`` shape, or a file path) and
    ``MCP_DEFAULTS`` from ``app.config`` and refuses a bad setting in
    :meth:`init_app` (at startup).  Servers with ``oauth`` are called on
    behalf of each user; their tokens go to *token_store*, or, encrypted with
    ``MCP_TOKEN_KEY``, to the app's database through Flask-SQLAlchemy (the
    ``mcpsync_token`` table, see :mod:`mcpsync.contrib.flask.stores`) or to
    ``MCP_TOKEN_DIR`` (a :class:`~mcpsync.auth.FileTokenStore` every worker
    shares): ``MCP_TOKEN_STORE = "sqlalchemy"`` or ``"file"`` chooses; unset,
    ``MCP_TOKEN_DIR`` if it is set, else Flask-SQLAlchemy if the app has it.

    :param token_store: a shared :class:`~mcpsync.auth.TokenStore` (each user
        gets their own part of it).
    :param user_id: ``fn() -> str``, the current user in a request (default:
        Flask-Login's ``current_user`` if installed, else one id per browser session).
    """

    def __init__(self, app: flask.Flask | None = None, *, token_store: TokenStore | None = None,
                 user_id: Callable[[], str] | None = None) -> None:
        self._token_store = token_store
        self._user_id = user_id or _default_user_id
        self._app: flask.Flask | None = None
        if app is not None:
            self.init_app(app)

    # -- set-up ----------------------------------------------------------------------------

    def init_app(self, app: flask.Flask) -> None:
        """Check the settings, make the (unconnected) shared clients, add blueprint and CLI.

        :raises mcpsync.contrib._server_set.ServerSetError: the settings have errors.
        """
        from ._blueprint import blueprint
        from ._cli import mcp_command

        config = app.config
        store = self._token_store
        key = NO_KEY_NEEDED if store is not None else config.get("MCP_TOKEN_KEY")
        servers = ServerSet.from_settings(config.get("MCP_SERVERS"), config.get("MCP_DEFAULTS"), key)
        for_user = _scoped(store) if store is not None else None
        if store is None and any(s.oauth is not None for s in servers.specs.values()):
            try:
                for_user = _user_stores(app, key)
            except ConfigError:
                servers.close()
                raise
        old = app.extensions.get("mcp")
        if isinstance(old, _AppState):
            old.servers.close()
        app.extensions["mcp"] = _AppState(servers, for_user)
        if "mcpsync" not in app.blueprints:
            app.register_blueprint(blueprint, url_prefix=config.get("MCP_URL_PREFIX", "/mcp"))
            app.register_error_handler(AuthorizationRequired, lambda exc: respond(to_login(web(), exc)))
            app.cli.add_command(mcp_command)
        if self._app is None:
            self._app = app
        app.extensions[EXTENSION_KEY] = self

    def _state(self) -> _AppState:
        app = flask.current_app if flask.has_app_context() else self._app
        if app is None:
            raise RuntimeError("MCP is not initialised: call init_app(app) first")
        state = app.extensions.get("mcp")
        if not isinstance(state, _AppState):
            raise RuntimeError("MCP.init_app() was not called for this app")
        return state

    # -- shared clients --------------------------------------------------------------------

    def _servers(self) -> ServerSet:
        return self._state().servers

    def spec(self, name: str) -> ServerSpec:
        """The validated settings of server *name* (:class:`ConfigError` if unknown)."""
        return self._servers().spec(name)

    def close(self) -> None:
        """Close the shared clients of the app (also done at exit)."""
        self._state().servers.close()

    # -- per-user clients -----------------------------------------------------------------

    def current_user_id(self) -> str:
        """The id the current request's tokens are kept under."""
        return str(self._user_id())

    def token_store(self) -> TokenStore:
        """The current user's part of the token store."""
        for_user = self._state().for_user
        if for_user is None:
            raise ConfigError("no server has 'oauth': there is no token store")
        return for_user(self.current_user_id())

    def oauth_for_user(self, name: str) -> OAuth:
        """The web-app :class:`~mcpsync.auth.OAuth` of the current user for server *name*."""
        callback = flask.url_for("mcpsync.callback", server=name, _external=True)
        return user_oauth(self._servers(), name, self.token_store, callback)

    def client_for_user(self, name: str) -> Client:
        """A new client acting for the current user on server *name*; use it in ``with``.

        A call that needs a login raises :class:`~mcpsync.auth.AuthorizationRequired`,
        which the extension answers with the redirect (and a way back to this page).
        """
        return user_client(self._servers(), name, self.oauth_for_user(name))

    def __repr__(self) -> str:
        return "<mcpsync.contrib.flask.MCP>"
