"""The system check for ``MCP_SERVERS`` (``manage.py check``; ``runserver`` and ``migrate`` run it).

Ids: ``mcpsync.E001`` a malformed setting or entry, ``E002`` an unset
environment variable, ``E003`` a command or directory that is not there,
``E004`` a client option the client refuses, ``E005`` per-user OAuth without a
usable ``MCP_TOKEN_KEY``; ``W001`` an unknown key (a typo is ignored, so it is
worth a warning).
"""

from __future__ import annotations

from typing import Any

from django.core import checks

from .._server_set import validate


@checks.register("mcpsync")  # on import, by McpConfig.ready (a set: registering again changes nothing)
def check_mcp_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Every problem in ``MCP_SERVERS``/``MCP_DEFAULTS`` as a check message."""
    from django.conf import settings

    from ._state import token_key

    _specs, problems = validate(getattr(settings, "MCP_SERVERS", None), getattr(settings, "MCP_DEFAULTS", None),
                                token_key=token_key())
    return [(checks.Error if p.level == "error" else checks.Warning)(p.message, hint=p.hint, id=p.id) for p in problems]
