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
    if options.prior_discover is not None and _adopt_prior(conn, options.prior_discover):
        return
    if options.prior_era == "legacy" and options.allows_handshake():
        # Remembered as a handshake-era server: skip the probe; probe after all if rejected.
        try:
            _handshake(conn, handshake_versions, timeout)
            return
        except (ServerError, HTTPStatusError, UnsupportedProtocolVersion) as exc:
            if not options.modern_versions() or not _rejection(exc):
                raise
            log.info("the server rejected the handshake it took before (%s); probing", type(exc).__name__)
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
            raw = conn.request("server/discover", None, timeout=bound)
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


def _adopt_prior(conn: Connection, prior: types.DiscoverResult) -> bool:
    """Take the era from a remembered ``server/discover`` result; False if it names no version we speak."""
    mutual = [v for v in conn.options.modern_versions() if v in prior.supported_versions]
    if not mutual:
        return False
    _adopt(conn, mutual[0], prior)
    conn.prior_unconfirmed = True
    log.debug("skipping the server/discover probe: using the prior result (%s)", mutual[0])
    return True


def stale_prior(conn: Connection, exc: BaseException, generation: int, timeout: float | None) -> bool:
    """Whether a request sent at era *generation* that failed with *exc* should be resent.

    True when the era since changed (another thread re-probed), or when the
    era came from ``prior_discover=``, no request confirmed it yet and *exc*
    looks like a rejection of it: then the server is probed again, once per
    connection, as the spec allows after a version mismatch.
    """
    with conn.reprobe_lock:
        if conn.era_generation != generation:
            return True  # sent on the era a re-probe replaced: resend on the new one
        if not conn.prior_unconfirmed or not _rejection(exc):
            return False
        conn.prior_unconfirmed = False
        log.info("the server rejected the remembered protocol era (%s); probing again", type(exc).__name__)
        remembered = conn.discover_result
        try:
            _renegotiate(conn, exc, timeout)
        except BaseException:
            # Keep sending on the remembered era: the server's own answers say what is wrong.
            conn.discover_result = remembered
            conn.set_modern_meta()
            raise
        conn.era_generation += 1
        return True


def _renegotiate(conn: Connection, exc: BaseException, timeout: float | None) -> None:
    conn.discover_result = None
    conn.session.default_meta = None
    options = conn.options
    outcome = _probe(conn, timeout) if options.modern_versions() else None
    if outcome is True:
        return
    if not options.allows_handshake():
        raise UnsupportedProtocolVersion(
            "server no longer speaks the remembered protocol version",
            requested=options.modern_versions()[0],
            supported=list(outcome) if isinstance(outcome, tuple) else [],
        ) from exc
    offered = options.offered_versions()
    if isinstance(outcome, tuple):
        offered = tuple(v for v in offered if v in outcome)
    _handshake(conn, offered, timeout)


def _rejection(exc: BaseException) -> bool:
    """What a server answers to a request in an era it does not (or no longer) speak(s)."""
    if isinstance(exc, UnsupportedProtocolVersion):
        return True
    if isinstance(exc, ServerError):
        return exc.code in (-32600, -32601)  # a handshake-era server: not initialized / unknown
    return isinstance(exc, HTTPStatusError) and exc.status in (400, 404)


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
    raw = conn.request("initialize", params, timeout=timeout)
    result = types.from_wire(types.InitializeResult, raw)
    if result.protocol_version not in offered:
        raise UnsupportedProtocolVersion(
            f"server chose protocol version {result.protocol_version!r}; "
            f"this client speaks {', '.join(offered)}",
            requested=offered[0],
            supported=[result.protocol_version],
        )
    conn.notify("notifications/initialized")
    conn.era = "legacy"
    conn.initialize_result = result
    conn.protocol_version = result.protocol_version
    conn.server_info = result.server_info
    conn.capabilities = result.capabilities
    conn.instructions = result.instructions
