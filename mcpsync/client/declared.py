"""What the server declared (name, capabilities, version, era, extensions, instructions),
read from the open connection (connecting first if needed): functions over
:class:`~.core.Core`, bound as properties of :class:`~mcpsync.Client`."""

from __future__ import annotations

from typing import Any

from mcpsync import types
from mcpsync.client.core import Core
from mcpsync.client.extensions import ExtensionsArg, request_meta
from mcpsync.client.extensions import server_extensions as _server_extensions

__all__ = ["discover_result", "era", "extension_meta", "instructions", "protocol_version", "server_capabilities",
           "server_extensions", "server_info"]


def server_info(client: Core) -> types.Implementation:
    """The server's name, version and title (connects if needed).

    A modern server may leave it out of ``server/discover``: then ``name`` and
    ``version`` are empty strings.
    """
    return client._connection().agreed.server_info


def server_capabilities(client: Core) -> types.ServerCapabilities:
    """What the server declared it supports (connects if needed)."""
    return client._connection().capabilities


def protocol_version(client: Core) -> str:
    """The negotiated protocol revision, e.g. ``"2026-07-28"`` or ``"2025-11-25"``."""
    return client._connection().protocol_version


def era(client: Core) -> str:
    """``"modern"`` (stateless, 2026-07-28) or ``"legacy"`` (initialize handshake)."""
    return client._connection().era


def discover_result(client: Core) -> types.DiscoverResult | None:
    """The ``server/discover`` result of a 2026-07-28 server, else ``None``.

    Save it with :func:`mcpsync.types.to_wire` and hand it back (restored with
    :func:`~mcpsync.types.from_wire`) as ``prior_discover=`` to skip the probe next time.
    """
    return client._connection().agreed.discover_result


def server_extensions(client: Core) -> dict[str, dict[str, Any]]:
    """The extensions the server declared: identifier -> settings (connects if needed)."""
    return _server_extensions(client._connection().capabilities)


def extension_meta(client: Core, extensions: ExtensionsArg) -> dict[str, Any]:
    """``_meta`` that declares *extensions* (identifier -> settings) on one request.

    Pass it as ``meta=`` (or as ``params["_meta"]`` of :meth:`~mcpsync.Client.request`); it carries
    the client's other capabilities too.  Empty on a handshake-era server, where
    ``initialize`` fixed the capabilities for the session.
    """
    return request_meta(client._connection(), extensions)


def instructions(client: Core) -> str | None:
    """The server's usage instructions, if it sent any."""
    return client._connection().agreed.instructions
