"""Clients that act for one user of a web app (OAuth's web-app flow, one token record per user).

A server whose ``MCP_SERVERS`` entry has ``oauth`` is never shared: each
request makes a short-lived :class:`~mcpsync.Client` whose
:class:`~mcpsync.auth.OAuth` reads and writes *that user's* records only (the
store is bound to the user, so no key a caller passes can reach another
user's tokens).  The pages, framework aside (over a :class:`~._web.Web`): "connect"
redirects to :meth:`~mcpsync.auth.OAuth.begin`'s URL, the callback calls
:meth:`~mcpsync.auth.OAuth.complete` (which checks ``state`` and ``iss``), "disconnect"
forgets the tokens, and :func:`to_login` turns :class:`~mcpsync.auth.AuthorizationRequired`
into the login redirect.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..auth import (AuthError, AuthorizationRequired, CallbackError, IssuerMismatchError, OAuth, StateMismatchError,
                    TokenStore)
from ..client.client import Client
from ..config import ConfigError
from ..exceptions import McpError
from ._cipher import RecordCipher
from ._web import Reply, Web, plain, redirect

if TYPE_CHECKING:
    from ._server_set import ServerSet

log = logging.getLogger(__name__)

#: The session key of the page to return to after a login.
NEXT_KEY = "mcpsync.next"


def user_oauth(servers: ServerSet, name: str, store: Callable[[], TokenStore], redirect_uri: str) -> OAuth:
    """The web-app OAuth of server *name* with *store()*, a store already bound to one user.

    :raises ConfigError: no such server, or it has no ``oauth`` entry.
    """
    spec = servers.spec(name)
    if spec.oauth is None or spec.config.url is None:
        raise ConfigError(f"MCP server {name!r} has no 'oauth' entry: use mcp[{name!r}]")
    settings = {"client_name": "mcpsync", **spec.oauth}
    return OAuth(store=store(), login=None, redirect_uri=redirect_uri, server_url=spec.config.url, **settings)


def user_client(servers: ServerSet, name: str, oauth: OAuth) -> Client:
    """A new, unconnected client for server *name* that authorizes with *oauth*; close it after use."""
    spec = servers.spec(name)
    return Client.from_server_config(spec.config, auth=oauth, **spec.options)


def client_of(web: Web, server: str) -> Any:
    """The user's client for *server* (their own for an ``oauth`` server), for a ``with``."""
    servers = web.servers()
    if server not in servers.specs:
        web.not_found("no such MCP server")
    if servers.spec(server).oauth is None:
        return contextlib.nullcontext(servers.get_client(server))
    return contextlib.closing(user_client(servers, server, web.oauth_for_user(server)))  # connects in the call


def is_safe_next(url: str | None) -> bool:
    """Whether *url* is a local path fit to redirect to after a login (no open redirect)."""
    if not url or not url.startswith("/") or url.startswith("//") or "\\" in url:
        return False
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc


class _Layered(TokenStore):
    """Another store's records, seen through a key (:meth:`_key`) and value layer."""

    def __init__(self, inner: TokenStore) -> None:
        super().__init__()
        self.inner = inner

    def _key(self, key: str) -> str:
        return key

    def load(self, key: str) -> dict[str, Any] | None:
        return self.inner.load(self._key(key))

    def save(self, key: str, record: dict[str, Any]) -> None:
        self.inner.save(self._key(key), record)

    def delete(self, key: str) -> None:
        self.inner.delete(self._key(key))

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        with self.inner.lock(self._key(key)):
            yield

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.inner!r}>"


class ScopedTokenStore(_Layered):
    """Another store's records under one *scope* (a user id): keys are prefixed, locks too.

    :param inner: the shared store (e.g. a :class:`~mcpsync.auth.FileTokenStore` every
        worker sees, or an :class:`EncryptedTokenStore` around it).
    :param scope: who the records belong to; any string (it is hashed into the key).
    """

    def __init__(self, inner: TokenStore, scope: str) -> None:
        super().__init__(inner)
        self._prefix = hashlib.sha256(scope.encode("utf-8")).hexdigest()[:32] + "/"

    def _key(self, key: str) -> str:
        return self._prefix + key


class EncryptedTokenStore(_Layered):
    """Another store's records, encrypted with :class:`~._cipher.RecordCipher` before they are saved.

    The inner store sees ``{"sealed": "<Fernet token>"}`` only; each sealed record is bound
    to its key (under a :class:`ScopedTokenStore`, the user's prefix is part of it), so a
    value copied to another key is refused.
    """

    def __init__(self, inner: TokenStore, cipher: RecordCipher) -> None:
        super().__init__(inner)
        self._cipher = cipher

    def load(self, key: str) -> dict[str, Any] | None:
        found = self.inner.load(key)
        return None if found is None else self._cipher.decrypt(str(found.get("sealed", "")), key)

    def save(self, key: str, record: dict[str, Any]) -> None:
        self.inner.save(key, {"sealed": self._cipher.encrypt(record, key)})


def _oauth(web: Web, server: str) -> OAuth:
    """The user's OAuth for *server*; not found for a server that is not a per-user one."""
    try:
        return web.oauth_for_user(server)  # user_oauth() checks the server (once)
    except ConfigError:
        web.not_found("no such MCP server to connect")


def _remember(web: Web, target: str | None) -> None:
    if is_safe_next(target) and web.session is not None:
        web.session[NEXT_KEY] = target


def _back(web: Web) -> Reply:
    target = web.session.pop(NEXT_KEY, None) if web.session is not None else None
    return redirect(str(target if is_safe_next(target) else web.setting("MCP_LOGIN_REDIRECT_URL") or "/"))


def connect(web: Web, server: str) -> Reply:
    """``GET connect/<server>?next=/path``: redirect to the authorization page; a 502 (logged)
    when the server or its authorization server cannot be reached."""
    _remember(web, web.args.get("next"))
    oauth = _oauth(web, server)
    try:
        return redirect(oauth.begin())
    except McpError as exc:
        log.warning("MCP server %r: %s: %s", server, type(exc).__name__, exc)
        return plain(502, f"the MCP server {server!r} cannot be reached for a login ({type(exc).__name__})")


def callback(web: Web, server: str) -> Reply:
    """``GET callback/<server>``: complete the login, then back to ``next``.

    A forged, replayed, another user's or stale callback (``state``/``iss``) is
    a 400 and exchanges nothing; a refusal at the authorization server is a
    400 too; any other failure (the server or the authorization server down,
    a refused code) is a 502.
    """
    oauth = _oauth(web, server)
    try:
        oauth.complete(web.url)
    except (StateMismatchError, IssuerMismatchError) as exc:
        return plain(400, f"this login link is not valid any more; start again ({exc})")
    except CallbackError as exc:
        return plain(400, f"the login did not succeed: {exc}")
    except AuthError as exc:
        return plain(502, f"the login could not be completed ({type(exc).__name__}: {exc})")
    return _back(web)


def disconnect(web: Web, server: str) -> Reply:
    """``POST disconnect/<server>``: forget the user's tokens for *server*, then back to ``next``."""
    _oauth(web, server).logout()
    _remember(web, web.args.get("next"))
    return _back(web)


def to_login(web: Web, exc: AuthorizationRequired) -> Reply:
    """A page raised :class:`~mcpsync.auth.AuthorizationRequired`: to the login, and back after it."""
    if web.method == "GET":
        _remember(web, web.full_path)
    return redirect(exc.url)
