"""The pages of :mod:`mcpsync.contrib` as Django views (included by :mod:`.urls`).

* ``connect/<server>/?next=/path``: starts a login (discovery, registration,
  PKCE, a one-shot ``state`` kept in the user's token store) and redirects to
  the authorization server.
* ``callback/<server>/``: checks ``state`` (and ``iss``), exchanges the code,
  stores the tokens and redirects to ``next`` (or ``MCP_LOGIN_REDIRECT_URL``,
  default ``"/"``).  A forged, replayed or stale callback is a 400 and
  exchanges nothing.  Step-up (a server asking for more scopes) comes back
  through the same callback.
* ``disconnect/<server>/`` (POST): forgets the user's tokens for the server.
* ``apps/<server>/<tool>/?arguments=<JSON>`` (``mcpsync:app``): the tool's MCP App
  (docs/apps.rst) for the signed-in user;
* ``apps/<server>/call/`` (POST, CSRF-protected): the app's ``tools/call``, ``caller="app"``;
* ``apps/sandbox/`` (``mcpsync:app-sandbox``): the sandbox proxy, answered only on
  ``MCP_APPS_SANDBOX_ORIGIN`` (add its host to ``ALLOWED_HOSTS``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NoReturn

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect, JsonResponse
from django.middleware.csrf import get_token
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_protect, ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST

from .. import _useroauth as login
from .. import apps as host
from .._web import SANDBOX_SALT, Reply
from . import _state, client_for_user, oauth_for_user


class _Web:
    """A Django request as the pages see it (:class:`~mcpsync.contrib._web.Web`)."""

    def __init__(self, request: HttpRequest) -> None:
        self.request, self.method, self.full_path = request, request.method, request.get_full_path()
        self.url = request.build_absolute_uri()
        self.origin = host.origin_of(request.build_absolute_uri("/"))
        self.session = getattr(request, "session", None)
        self.servers = _state.servers

    def setting(self, name: str, default: Any = None) -> Any:
        return getattr(settings, name, default)

    def arg(self, name: str) -> Any:
        return (self.request.POST if self.method == "POST" else self.request.GET).get(name)

    def reverse(self, name: str, **kwargs: str) -> str:
        return str(reverse(f"mcpsync:{name}", kwargs=kwargs))

    def oauth_for_user(self, server: str) -> Any:
        return oauth_for_user(self.request, server)

    def client_for_user(self, server: str) -> Any:
        return client_for_user(self.request, server)

    def sign(self, payload: Any) -> str:
        return str(signing.dumps(payload, salt=SANDBOX_SALT, compress=True))

    def unsign(self, text: str) -> Any:
        try:
            return signing.loads(text, salt=SANDBOX_SALT)
        except signing.BadSignature:
            return None

    def csrf(self) -> tuple[str, str]:
        return "X-CSRFToken", get_token(self.request)

    def not_found(self, why: str) -> NoReturn:
        raise Http404(why)


def respond(reply: Reply) -> HttpResponse:
    """*reply* as Django's response."""
    if reply.status == 302:
        return HttpResponseRedirect(reply.headers["Location"])
    if isinstance(reply.body, str):
        response = HttpResponse(reply.body, status=reply.status, content_type="text/html; charset=utf-8")
    else:
        response = JsonResponse(reply.body, status=reply.status, safe=False)
    for name, value in reply.headers.items():
        response[name] = value
    return response


def _view(page: Callable[..., Reply], *decorators: Callable[[Any], Any]) -> Any:
    """A Django view of *page* (a function of the request's :class:`_Web` and the URL's arguments)."""
    def view(request: HttpRequest, **kwargs: str) -> HttpResponse:
        return respond(page(_Web(request), **kwargs))

    return functools.reduce(lambda inner, decorator: decorator(inner), reversed(decorators), view)


connect = _view(login.connect, login_required, require_GET)
callback = _view(login.callback, login_required, require_GET)
disconnect = _view(login.disconnect, login_required, require_POST)
# ensure_csrf_cookie: the bridge's token must match this cookie (with or without the CSRF middleware).
app = _view(host.app_page, login_required, ensure_csrf_cookie, require_GET)
app_sandbox = _view(host.sandbox_page, xframe_options_exempt, require_GET)


@login_required
@csrf_protect
def app_call(request: HttpRequest, server: str) -> HttpResponse:
    """A ``tools/call`` from an app of *server* (a GET is the page of a tool named ``call``)."""
    if request.method == "GET":
        return app(request, server=server, tool="call")
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    return respond(host.app_call(_Web(request), server, request.body))
