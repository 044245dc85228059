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
from .._web import SANDBOX_SALT, Reply, Web
from . import _state, oauth_for_user


def web_of(request: HttpRequest) -> Web:
    """The pages' view of a Django request."""
    return Web(
        method=request.method, url=request.build_absolute_uri(), full_path=request.get_full_path(),
        args=request.POST if request.method == "POST" else request.GET, session=getattr(request, "session", None),
        servers=_state.servers, setting=lambda name: getattr(settings, name, None),
        reverse=lambda name, **kwargs: str(reverse(f"mcpsync:{name}", kwargs=kwargs)),
        oauth_for_user=functools.partial(oauth_for_user, request),
        sign=lambda payload: str(signing.dumps(payload, salt=SANDBOX_SALT, compress=True)), unsign=_unsign,
        csrf=lambda: ("X-CSRFToken", get_token(request)), not_found=_not_found,
    )


def _unsign(text: str) -> Any:
    try:
        return signing.loads(text, salt=SANDBOX_SALT)
    except signing.BadSignature:
        return None


def _not_found(why: str) -> NoReturn:
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
    """A Django view of *page* (a function of the request's :class:`~mcpsync.contrib._web.Web` and the URL's arguments)."""
    @functools.wraps(page)
    def view(request: HttpRequest, **kwargs: str) -> HttpResponse:
        return respond(page(web_of(request), **kwargs))

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
    return respond(host.app_call(web_of(request), server, request.body))
