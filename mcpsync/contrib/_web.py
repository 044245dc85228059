"""The seam between the pages of :mod:`mcpsync.contrib` and a web framework.

The pages ("connect this server", the OAuth callback, "disconnect" in
:mod:`._useroauth`; the MCP Apps host pages in :mod:`.apps`) are written once, over a
:class:`Web` (one request, as they see it), and answer a :class:`Reply`.  Each framework
module wraps its request in a :class:`Web` and turns the :class:`Reply` into its own
response; only what really differs (sessions, URL names, signing, CSRF) stays there.
"""

from __future__ import annotations

import contextlib
from collections.abc import MutableMapping
from typing import Any, NoReturn, Protocol

import attrs

from ..auth import OAuth
from ._server_set import ServerSet

_NO_STORE = {"Cache-Control": "no-store"}
#: The salt of the signed links to the MCP Apps sandbox page.
SANDBOX_SALT = "mcpsync.contrib.apps.sandbox"


@attrs.frozen
class Reply:
    """What a page answers: status, body (``str``: HTML; else JSON), headers.

    A 302 is a redirect to its ``Location``.
    """

    status: int
    body: Any
    headers: dict[str, str] = attrs.field(factory=lambda: dict(_NO_STORE))


def plain(status: int, text: str) -> Reply:
    """A short ``text/plain`` answer (an error for the user to read)."""
    return Reply(status, text, {"Content-Type": "text/plain; charset=utf-8"})


def redirect(url: str) -> Reply:
    return Reply(302, "", {"Location": url})


class Web(Protocol):
    """One request and its app, as the pages see them."""

    #: The request's method, full URL, path with query, and the app's origin (``scheme://host[:port]``).
    method: str
    url: str
    full_path: str
    origin: str
    #: The user's session (``None``: the app has none).
    session: MutableMapping[str, Any] | None

    def servers(self) -> ServerSet: ...

    def setting(self, name: str, default: Any = None) -> Any: ...

    def arg(self, name: str) -> str | None:
        """A query argument (of a POST: a form field)."""

    def reverse(self, name: str, **kwargs: str) -> str:
        """The path of page *name* (``"callback"``, ``"app-call"``, ``"app-sandbox"``)."""

    def oauth_for_user(self, server: str) -> OAuth: ...

    def client_for_user(self, server: str) -> Any: ...

    def sign(self, payload: Any) -> str: ...

    def unsign(self, text: str) -> Any:
        """The payload of a :meth:`sign`\\ ed text; ``None`` if its signature does not check out."""

    def csrf(self) -> tuple[str, str]:
        """The header name and the token a script sends back with a POST."""

    def not_found(self, why: str) -> NoReturn: ...


def client_of(web: Web, server: str) -> Any:
    """The user's client for *server* (their own for an ``oauth`` server), for a ``with``."""
    servers = web.servers()
    if server not in servers:
        web.not_found("no such MCP server")
    if servers.spec(server).oauth is None:
        return contextlib.nullcontext(servers.get_client(server))
    return contextlib.closing(web.client_for_user(server))  # connects in the call, not here
