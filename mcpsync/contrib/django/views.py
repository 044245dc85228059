""""Connect this server" and the OAuth callback, per user (included by :mod:`.urls`).

* ``connect/<server>/?next=/path``: starts a login (discovery, registration,
  PKCE, a one-shot ``state`` kept in the user's token store) and redirects to
  the authorization server.
* ``callback/<server>/``: checks ``state`` (and ``iss``), exchanges the code,
  stores the tokens and redirects to ``next`` (or ``MCP_LOGIN_REDIRECT_URL``,
  default ``"/"``).  A forged, replayed or stale callback is a 400 and
  exchanges nothing.  Step-up (a server asking for more scopes) comes back
  through the same callback.
* ``disconnect/<server>/`` (POST): forgets the user's tokens for the server.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.views.decorators.http import require_GET, require_POST

from .._useroauth import finish_login, is_safe_next, login_url
from ...auth import OAuth
from . import _state
from . import oauth_for_user

#: The session key holding where to go after the login.
NEXT_KEY = "mcpsync.next"


def _oauth(request: HttpRequest, server: str) -> OAuth:
    """The user's OAuth for *server*; a 404 for a server that is not a per-user one."""
    servers = _state.servers()
    if server not in servers or servers.spec(server).oauth is None:
        raise Http404("no such MCP server to connect")
    return oauth_for_user(request, server)


def _remember_next(request: HttpRequest, target: str | None) -> None:
    if is_safe_next(target) and hasattr(request, "session"):
        request.session[NEXT_KEY] = target


def _after_login(request: HttpRequest) -> HttpResponseRedirect:
    target = request.session.pop(NEXT_KEY, None) if hasattr(request, "session") else None
    if not is_safe_next(target):
        target = getattr(settings, "MCP_LOGIN_REDIRECT_URL", "/")
    return HttpResponseRedirect(target)


@login_required
@require_GET
def connect(request: HttpRequest, server: str) -> HttpResponse:
    """Redirect the user to the server's authorization page."""
    _remember_next(request, request.GET.get("next"))
    status, url_or_text = login_url(_oauth(request, server), server)
    if status != 302:
        return HttpResponse(url_or_text, status=status, content_type="text/plain")
    return HttpResponseRedirect(url_or_text)


@login_required
@require_GET
def callback(request: HttpRequest, server: str) -> HttpResponse:
    """Finish the login the callback belongs to (this user's, with this ``state``)."""
    failed = finish_login(_oauth(request, server), request.build_absolute_uri())
    if failed is not None:
        return HttpResponse(failed[1], status=failed[0], content_type="text/plain")
    return _after_login(request)


@login_required
@require_POST
def disconnect(request: HttpRequest, server: str) -> HttpResponse:
    """Forget the user's tokens for *server*."""
    _oauth(request, server).logout()
    _remember_next(request, request.POST.get("next"))
    return _after_login(request)
