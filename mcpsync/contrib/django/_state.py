"""The process-wide :class:`~mcpsync.contrib._server_set.ServerSet` built from the Django settings.

Built by :meth:`McpConfig.ready` (so a bad ``MCP_SERVERS`` stops the app at
startup: ``runserver``, ``migrate`` and a WSGI server alike), closed at exit,
and rebuilt when a test changes the settings (``override_settings``).
"""

from __future__ import annotations

import threading
from typing import Any

from .._server_set import NO_KEY_NEEDED, ServerSet, ServerSetError

#: The settings this app reads; changing any of them rebuilds the server set.
SETTINGS = frozenset({"MCP_SERVERS", "MCP_DEFAULTS", "MCP_TOKEN_KEY", "MCP_TOKEN_STORE", "MCP_TOKEN_CACHE"})

_lock = threading.Lock()
_current: ServerSet | None = None


def build() -> ServerSet:
    """Validate the settings and make the server set (replacing and closing any previous one).

    :raises django.core.exceptions.ImproperlyConfigured: the settings have errors.
    """
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        fresh = ServerSet.from_settings(getattr(settings, "MCP_SERVERS", None), getattr(settings, "MCP_DEFAULTS", None),
                                        token_key())
    except ServerSetError as exc:
        raise ImproperlyConfigured(str(exc)) from None
    _swap(fresh)
    return fresh


def _swap(fresh: ServerSet | None) -> None:
    global _current
    with _lock:
        old, _current = _current, fresh
    if old is not None:
        old.close()


def token_key() -> Any:
    """``MCP_TOKEN_KEY``, or "no key needed" when the token store is the app's own."""
    from django.conf import settings

    if getattr(settings, "MCP_TOKEN_STORE", "database") not in ("database", "cache"):
        return NO_KEY_NEEDED
    return getattr(settings, "MCP_TOKEN_KEY", None)


def servers() -> ServerSet:
    """The current server set (built on first use after :func:`reset`)."""
    current = _current
    return current if current is not None else build()


def reset(**kwargs: Any) -> None:
    """Close the server set; the next use builds one from the settings (``setting_changed``)."""
    if kwargs.get("setting", "MCP_SERVERS") in SETTINGS:
        _swap(None)
