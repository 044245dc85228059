"""The MCP Apps host pages (docs/apps.rst), included by :mod:`.urls` beside the login views.

* ``apps/<server>/<tool>/?arguments=<JSON>`` (``mcpsync:app``): the tool's app for the
  signed-in user;
* ``apps/<server>/call/`` (POST, CSRF-protected): the app's ``tools/call``, ``caller="app"``;
* ``apps/sandbox/`` (``mcpsync:app-sandbox``): the sandbox proxy, answered only on
  ``MCP_APPS_SANDBOX_ORIGIN`` (add its host to ``ALLOWED_HOSTS``).
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.middleware.csrf import get_token
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_protect, ensure_csrf_cookie
from django.views.decorators.http import require_GET

from .. import apps as host
from . import _state
from . import client_for_user

_SALT = "mcpsync.contrib.apps.sandbox"


def _respond(reply: host.Reply) -> HttpResponse:
    if isinstance(reply.body, str):
        response = HttpResponse(reply.body, status=reply.status, content_type="text/html; charset=utf-8")
    else:
        response = JsonResponse(reply.body, status=reply.status, safe=False)
    for name, value in reply.headers.items():
        response[name] = value
    return response


def _client(request: HttpRequest, server: str) -> Any:
    """The user's client for *server* (their own for an ``oauth`` server), in a ``with``."""
    servers = _state.servers()
    if server not in servers:
        raise Http404("no such MCP server")
    if servers.spec(server).oauth is None:
        return contextlib.nullcontext(servers.get_client(server))
    return contextlib.closing(client_for_user(request, server))  # connects in the call, not here


def _origins(request: HttpRequest) -> tuple[str, str]:
    origin = host.origin_of(request.build_absolute_uri("/"))
    return origin, host.sandbox_origin(getattr(settings, "MCP_APPS_SANDBOX_ORIGIN", None), origin)


@login_required
@ensure_csrf_cookie  # the bridge's token must match this cookie (with or without the CSRF middleware)
@require_GET
def app(request: HttpRequest, server: str, tool: str) -> HttpResponse:
    """The host page of *tool*'s app; a 404 for a tool without a UI."""
    origin, sandbox = _origins(request)
    path = reverse("mcpsync:app-sandbox")
    with _client(request, server) as client:
        return _respond(host.app_page(
            client, server, tool, request.GET.get("arguments"), host_origin=origin, sandbox=sandbox,
            sandbox_url=lambda payload: f"{sandbox}{path}?s={signing.dumps(payload, salt=_SALT, compress=True)}",
            call_url=reverse("mcpsync:app-call", args=[server]), csrf=("X-CSRFToken", get_token(request)),
        ))


@login_required
@csrf_protect
def app_call(request: HttpRequest, server: str) -> HttpResponse:
    """A ``tools/call`` from an app of *server* (a GET is the page of a tool named ``call``)."""
    if request.method == "GET":
        return app(request, server, "call")
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    with _client(request, server) as client:
        return _respond(host.app_call(client, server, request.body))


@xframe_options_exempt
@require_GET
def app_sandbox(request: HttpRequest) -> HttpResponse:
    """The sandbox proxy page, on the sandbox origin only."""
    own = host.origin_of(request.build_absolute_uri("/"))
    if own != host.origin_of(str(getattr(settings, "MCP_APPS_SANDBOX_ORIGIN", ""))):
        raise Http404("the MCP Apps sandbox is served on MCP_APPS_SANDBOX_ORIGIN only")
    try:
        payload = signing.loads(request.GET.get("s", ""), salt=_SALT)
    except signing.BadSignature:
        payload = None
    return _respond(host.sandbox_page(payload))
