"""Django integration: settings-configured MCP servers, per-user OAuth, checks and commands.

::

    # settings.py
    INSTALLED_APPS = [..., "mcpsync.contrib.django"]
    MCP_SERVERS = {"demo": {"command": "python", "args": ["-m", "mcpsync.demo"]}}

    # views.py
    from mcpsync.contrib.django import mcp

    def add(request):
        return JsonResponse({"sum": mcp["demo"].call_tool("add", {"a": 1, "b": 2}).text})

See ``docs/django.rst``.  Importing this package imports nothing of Django's
models; the app's :class:`~.apps.McpConfig` checks the settings at startup.

May import: Django, :mod:`mcpsync.contrib` and everything below it.
"""

from __future__ import annotations

from ._api import McpServers, client_for_user, get_client, mcp, oauth_for_user, token_store_for

__all__ = ["McpServers", "client_for_user", "get_client", "mcp", "oauth_for_user", "token_store_for"]
