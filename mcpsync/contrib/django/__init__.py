"""Django integration: settings-configured MCP servers, per-user OAuth, checks and commands.

::

    # settings.py
    INSTALLED_APPS = [..., "mcpsync.contrib.django"]
    MCP_SERVERS = {"demo": {"command": "python", "args": ["-m", "mcpsync.demo"]}}

    # views.py
    from mcpsync.contrib.django import mcp

    def add(request):
        return JsonResponse({"sum": mcp["demo"].call_tool("add", {"a": 1, "b": 2}).text})

See ``docs/django.rst``.  Here: what views use (``mcp``, :func:`get_client`,
:func:`client_for_user`, :func:`oauth_for_user`, :func:`token_store_for`).  Importing this
package imports nothing of Django's models; the app's :class:`~.apps.McpConfig` checks the
settings at startup.

May import: Django, :mod:`mcpsync.contrib` and everything below it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from .._server_set import ServerFront, ServerSet
from . import _state

if TYPE_CHECKING:
    from django.http import HttpRequest

    from ...auth import OAuth, TokenStore
    from ...client.client import Client
    from ...shared import SharedClient


def get_client(name: str | None = None) -> SharedClient:
    """The shared client of server *name* (default: the only one); see :meth:`McpServers.get_client`."""
    return mcp.get_client(name)


def _user_key(user: Any) -> str:
    from django.core.exceptions import PermissionDenied

    if user is None or not getattr(user, "is_authenticated", False):
        raise PermissionDenied("log in to use this MCP server: its tokens are kept per user")
    return str(user.pk)


def token_store_for(user: Any) -> TokenStore:
    """The token store of *user*, as ``MCP_TOKEN_STORE`` says.

    ``"database"`` (default), ``"cache"`` (``MCP_TOKEN_CACHE``, default
    ``"default"``), or the dotted path of ``fn(user_key: str) -> TokenStore``.
    """
    from django.conf import settings
    from django.utils.module_loading import import_string

    from .._cipher import RecordCipher
    from .stores import CacheTokenStore, DatabaseTokenStore

    key, kind = _user_key(user), getattr(settings, "MCP_TOKEN_STORE", "database")
    if kind not in ("database", "cache"):
        return cast("TokenStore", import_string(kind)(key))
    cipher = RecordCipher(getattr(settings, "MCP_TOKEN_KEY", None))
    if kind == "cache":
        return CacheTokenStore(key, cipher, getattr(settings, "MCP_TOKEN_CACHE", "default"))
    return DatabaseTokenStore(key, cipher)


def oauth_for_user(request: HttpRequest, name: str) -> OAuth:
    """The web-app :class:`~mcpsync.auth.OAuth` of ``request.user`` for server *name*.

    Its redirect URI is this app's callback view (``mcpsync:callback``).
    """
    from django.urls import reverse

    from .._useroauth import user_oauth

    callback = request.build_absolute_uri(reverse("mcpsync:callback", args=[name]))
    return user_oauth(_state.servers(), name, lambda: token_store_for(request.user), callback)


def client_for_user(request: HttpRequest, name: str) -> Client:
    """A new client acting for ``request.user`` on server *name*; use it in ``with``.

    A call that needs the user to (re)authorize raises
    :class:`~mcpsync.auth.AuthorizationRequired`;
    :class:`~mcpsync.contrib.django.middleware.McpAuthorizationMiddleware`
    turns that into the redirect.
    """
    from .._useroauth import user_client

    return user_client(_state.servers(), name, oauth_for_user(request, name))


class McpServers(ServerFront):
    """``mcp``: the servers of ``MCP_SERVERS`` (see :class:`~mcpsync.contrib._server_set.ServerFront`)."""

    def _servers(self) -> ServerSet:
        return _state.servers()

    def __repr__(self) -> str:
        return "<mcpsync.contrib.django.mcp>"


#: The configured servers (see :class:`McpServers`).
mcp = McpServers()

__all__ = ["McpServers", "client_for_user", "get_client", "mcp", "oauth_for_user", "token_store_for"]
