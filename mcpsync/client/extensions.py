"""Protocol extensions (SEP-2133) on the client side: advertising them, reading the server's.

A client advertises an extension, with its settings object, in the
``extensions`` member of its capabilities: once in ``initialize`` (handshake
era), and in ``_meta["io.modelcontextprotocol/clientCapabilities"]`` of every
request (2026-07-28).  Extensions are off unless the user turns them on
(``Client(..., extensions={...})`` for every request, or one request at a
time through :func:`request_meta`, which is how tasks opt in per call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpsync import types
from mcpsync.types.modern import CLIENT_CAPABILITIES_KEY

if TYPE_CHECKING:
    from mcpsync.client.connection import Connection

__all__ = ["normalize_extensions", "request_meta", "server_extensions"]

#: What ``extensions=`` accepts: identifier -> settings object (``None`` or ``{}``: no settings).
ExtensionsArg = Mapping[str, "Mapping[str, Any] | None"]


def normalize_extensions(extensions: ExtensionsArg | None) -> dict[str, dict[str, Any]]:
    """Validate identifiers and settings; settings become plain dicts.

    :raises ValueError: for an identifier without a vendor prefix.
    :raises TypeError: for settings that are not a mapping.
    """
    out: dict[str, dict[str, Any]] = {}
    for identifier, settings in (extensions or {}).items():
        types.check_extension_id(identifier)
        if settings is None:
            settings = {}
        if not isinstance(settings, Mapping):
            raise TypeError(
                f"settings of extension {identifier!r} must be a mapping (or None),"
                f" not {type(settings).__name__}"
            )
        out[identifier] = dict(settings)
    return out


def request_meta(conn: Connection, extensions: ExtensionsArg | None) -> dict[str, Any]:
    """The ``_meta`` that advertises *extensions* on one modern request, on top of the client's.

    A request's own ``_meta`` entries replace the connection's defaults key by
    key, so this carries the whole capabilities object.  Empty in the
    handshake era, where capabilities were fixed by ``initialize``.
    """
    extra = normalize_extensions(extensions)
    if conn.era != "modern" or not extra:
        return {}
    caps = dict((conn.session.default_meta or {}).get(CLIENT_CAPABILITIES_KEY) or {})
    caps["extensions"] = {**(caps.get("extensions") or {}), **extra}  # these win on a clash
    return {CLIENT_CAPABILITIES_KEY: caps}


def server_extensions(capabilities: types.ServerCapabilities) -> dict[str, dict[str, Any]]:
    """The extensions the server declared (identifier -> settings), from either era."""
    declared = capabilities.extensions
    if not isinstance(declared, dict):
        return {}
    return {key: dict(value) if isinstance(value, dict) else {} for key, value in declared.items()}
