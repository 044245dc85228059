"""Views that call MCP servers through mcpsync.contrib.django."""

from __future__ import annotations

import os

from django.conf import settings
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, JsonResponse

import mcpsync
from mcpsync.auth import AuthorizationRequired
from mcpsync.contrib.django import client_for_user, mcp


def _failed(exc: mcpsync.McpError) -> JsonResponse:
    """What a view answers (docs/django.rst, "In a view"): the tool refused (422), no answer
    in time (504), or the server failed: it is a backend, so a 502, not a crash page."""
    status = 422 if isinstance(exc, mcpsync.ToolError) else 504 if isinstance(exc, mcpsync.RequestTimeout) else 502
    return JsonResponse({"error": type(exc).__name__, "message": str(exc)}, status=status)


def tools(request: HttpRequest) -> JsonResponse:
    try:
        names = [tool.name for tool in mcp["demo"].list_tools()]
    except mcpsync.McpError as exc:
        return _failed(exc)
    return JsonResponse(names, safe=False)


def add(request: HttpRequest) -> JsonResponse:
    a = float(request.GET.get("a", "0"))
    b = float(request.GET.get("b", "0"))
    try:
        result = mcp["demo"].call_tool("add", {"a": a, "b": b})
        result.raise_for_error()
    except mcpsync.McpError as exc:
        return _failed(exc)
    return JsonResponse({"sum": float(result.text), "pid": os.getpid()})


def slow(request: HttpRequest) -> JsonResponse:
    """A tool call that takes a while (the demo's countdown), bounded by ?timeout=."""
    try:
        result = mcp["demo"].call_tool("countdown", {"n": int(request.GET.get("n", "3"))},
                                       timeout=float(request.GET.get("timeout", "20")))
        result.raise_for_error()
    except mcpsync.McpError as exc:
        return _failed(exc)
    return JsonResponse({"text": result.text, "pid": os.getpid()})


@login_required
def remote_tools(request: HttpRequest) -> JsonResponse:
    try:
        with client_for_user(request, "remote") as client:
            return JsonResponse({"tools": sorted(t.name for t in client.list_tools())})
    except AuthorizationRequired:
        raise  # a login is needed: the middleware redirects the user
    except mcpsync.McpError as exc:
        return _failed(exc)


@login_required
def remote_call(request: HttpRequest, name: str) -> JsonResponse:
    try:
        with client_for_user(request, "remote") as client:
            result = client.call_tool(name, dict(request.GET.items()))
            result.raise_for_error()
            return JsonResponse({"text": result.text})
    except AuthorizationRequired:
        raise
    except mcpsync.McpError as exc:
        return _failed(exc)


def demo_login(request: HttpRequest) -> JsonResponse:
    """Log in as ?user=NAME without a password: the example's stand-in for a real login."""
    if not settings.DEMO_LOGIN:
        raise Http404("no demo login")
    user, _ = get_user_model().objects.get_or_create(username=request.GET["user"])
    login(request, user)
    return JsonResponse({"user": user.username})
