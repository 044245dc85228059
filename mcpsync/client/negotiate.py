"""Choosing the protocol era: the ``server/discover`` probe or the ``initialize`` handshake.

``mode="auto"`` probes ``server/discover`` once (bounded by
``discover_timeout``).  A result, or a recognised modern error such as -32022
naming a version we speak, means the stateless era; any other error or no
answer in time means a handshake-era server, and we fall back to
``initialize`` (spec 2026-07-28, *Versioning → Backward Compatibility*).  The
probe costs at most one round trip on a legacy server.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mcpsync import types
from mcpsync.client.options import ClientOptions
from mcpsync.exceptions import (
    HTTPStatusError,
    ProtocolError,
    RequestTimeout,
    ServerError,
    ServerUnsupportedProtocolVersion,
    UnsupportedProtocolVersion,
)
from mcpsync.types.modern import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY

if TYPE_CHECKING:
    from mcpsync.client.connection import Connection

__all__ = ["negotiate", "modern_meta"]

log = logging.getLogger("mcpsync.client.client")


def modern_meta(options: ClientOptions, version: str, log_level: str | None) -> dict[str, Any]:
    """The ``_meta`` entries every modern request carries."""
    name, client_version = options.client_info
    meta: dict[str, Any] = {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_INFO_KEY: {"name": name, "version": client_version},
        CLIENT_CAPABILITIES_KEY: options.client_capabilities(modern=True),
    }
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    return meta


def negotiate(conn: Connection, timeout: float | None) -> None:
    """Settle the era and version for *conn*; raises if none can be agreed."""
    options = conn.options
    handshake_versions = options.offered_versions()
    if options.modern_versions():
        outcome = _probe(conn, timeout)
        if outcome is True:
            return
        if not options.allows_handshake():
            raise UnsupportedProtocolVersion(
                f"server does not speak the stateless protocol ({', '.join(options.modern_versions())})",
                requested=options.modern_versions()[0],
                supported=list(outcome) if isinstance(outcome, tuple) else [],
            )
        if isinstance(outcome, tuple):
            handshake_versions = tuple(v for v in handshake_versions if v in outcome)
            if not handshake_versions:
                ours = (*options.modern_versions(), *options.offered_versions())
                raise UnsupportedProtocolVersion(
                    f"server supports {', '.join(outcome) or 'no version it named'}"
                    f" (and refused {options.modern_versions()[0]}); this client speaks {', '.join(ours)}",
                    requested=options.modern_versions()[0],
                    supported=list(outcome),
                )
    _handshake(conn, handshake_versions, timeout)


def _probe(conn: Connection, timeout: float | None) -> bool | tuple[str, ...] | None:
    """True when the server is modern and adopted; else what it said it supports (or None)."""
    options = conn.options
    candidates = list(options.modern_versions())
    bound = options.discover_timeout if timeout is None else min(timeout, options.discover_timeout)
    version = candidates[0]
    for attempt in range(2):
        conn.session.default_meta = modern_meta(options, version, conn.log_level)
        try:
            pending = conn.session.send_request("server/discover")
            raw = conn.session.wait(pending, timeout=bound)
            result = types.from_wire(types.DiscoverResult, raw)
        except ServerUnsupportedProtocolVersion as exc:
            conn.session.default_meta = None
            # SEP-2575: retry once with the version we prefer among those the server
            # lists, even when that is the one it just refused (the list is its word on
            # what it speaks); a second refusal ends the probe.
            mutual = [v for v in candidates if v in exc.supported]
            if mutual and attempt == 0:
                version = mutual[0]
                continue
            log.debug("server/discover: server supports %s", exc.supported)
            return tuple(exc.supported)
        except (ServerError, ProtocolError, RequestTimeout, HTTPStatusError) as exc:
            # Not a recognised modern answer: a handshake-era server.
            conn.session.default_meta = None
            log.debug("server/discover failed (%s); using the initialize handshake", exc)
            return None
        if version not in result.supported_versions:
            mutual = [v for v in candidates if v in result.supported_versions]
            if not mutual:
                conn.session.default_meta = None
                return tuple(result.supported_versions)
            version = mutual[0]
        _adopt(conn, version, result)
        return True
    return None


def _adopt(conn: Connection, version: str, result: types.DiscoverResult) -> None:
    conn.era = "modern"
    conn.protocol_version = version
    conn.discover_result = result
    conn.capabilities = result.capabilities
    conn.instructions = result.instructions
    info = (result.meta or {}).get(SERVER_INFO_KEY)
    if isinstance(info, dict):
        try:
            conn.server_info = types.from_wire(types.Implementation, info)
        except ProtocolError:
            log.debug("ignoring malformed serverInfo in server/discover")
    conn.set_modern_meta()


def _handshake(conn: Connection, offered: tuple[str, ...], timeout: float | None) -> None:
    if not offered:
        raise UnsupportedProtocolVersion(
            "server and client share no protocol version",
            requested=conn.options.offered_versions()[0],
        )
    name, version = conn.options.client_info
    params = {
        "protocolVersion": offered[0],
        "capabilities": conn.options.client_capabilities(),
        "clientInfo": {"name": name, "version": version},
    }
    pending = conn.session.send_request("initialize", params)
    raw = conn.session.wait(pending, timeout=timeout)
    result = types.from_wire(types.InitializeResult, raw)
    if result.protocol_version not in offered:
        raise UnsupportedProtocolVersion(
            f"server chose protocol version {result.protocol_version!r}; "
            f"this client speaks {', '.join(offered)}",
            requested=offered[0],
            supported=[result.protocol_version],
        )
    conn.session.notify("notifications/initialized")
    conn.era = "legacy"
    conn.initialize_result = result
    conn.protocol_version = result.protocol_version
    conn.server_info = result.server_info
    conn.capabilities = result.capabilities
    conn.instructions = result.instructions
