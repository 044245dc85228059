"""The seam between the pages of :mod:`mcpsync.contrib` and a web framework.

The pages ("connect this server", the OAuth callback, "disconnect" in
:mod:`._useroauth`; the MCP Apps host pages in :mod:`.apps`) are written once, over a
:class:`Web` (one request, as they see it), and answer a :class:`Reply`.  Each framework
module makes a :class:`Web` of its request and turns the :class:`Reply` into its own
response; only what really differs (sessions, URL names, signing, CSRF) stays there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, NoReturn

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


@attrs.frozen
class Web:
    """One request and its app, as the pages see them (each framework makes one per request)."""

    #: The request's method, full URL (the app's origin is its origin) and path with query.
    method: str
    url: str
    full_path: str
    #: The query's arguments (a POST's: its form fields).
    args: Mapping[str, str]
    #: The user's session (``None``: the app has none).
    session: MutableMapping[str, Any] | None
    servers: Callable[[], ServerSet]
    #: The app's setting of a name (``None``: unset).
    setting: Callable[[str], Any]
    #: The path of a page (``"callback"``, ``"app-call"``, ``"app-sandbox"``) from its URL's arguments.
    reverse: Callable[..., str]
    oauth_for_user: Callable[[str], OAuth]
    #: A payload signed into a text, and back (``None``: the signature does not check out).
    sign: Callable[[Any], str]
    unsign: Callable[[str], Any]
    #: The header name and the token a script sends back with a POST.
    csrf: Callable[[], tuple[str, str]]
    not_found: Callable[[str], NoReturn]
