"""Views that call the MCP server through the shared client."""

from __future__ import annotations

import os

from django.http import HttpRequest, JsonResponse

import mcpsync

from .mcp import client


def tools(request: HttpRequest) -> JsonResponse:
    try:
        names = [tool.name for tool in client.list_tools()]
    except mcpsync.McpError as exc:
        return JsonResponse({"error": type(exc).__name__, "message": str(exc)}, status=502)
    return JsonResponse(names, safe=False)


def add(request: HttpRequest) -> JsonResponse:
    a = float(request.GET.get("a", "0"))
    b = float(request.GET.get("b", "0"))
    try:
        result = client.call_tool("add", {"a": a, "b": b})
        result.raise_for_error()
    except mcpsync.McpError as exc:
        # The MCP server is a backend: its failures are a 502, not a crash page.
        return JsonResponse({"error": type(exc).__name__, "message": str(exc)}, status=502)
    return JsonResponse({"sum": float(result.text), "pid": os.getpid()})
