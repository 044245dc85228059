"""Choosing the protocol era: the ``server/discover`` probe or the ``initialize`` handshake.

``mode="auto"`` probes ``server/discover`` (spec 2026-07-28, *stdio* and
*Streamable HTTP*, *Backward Compatibility*).  A result, or a recognised
modern error such as -32022 naming a version we speak, means the stateless
era; any other error means a handshake-era server, and we fall back to
``initialize``.

"No answer within a reasonable timeout" needs care: a server may simply be
slow to start (a first ``uvx``/``npx -y`` run, ``docker run -i``, a JVM), and
a dual-era server that reads the queued probe late answers it and locks into
2026-07-28.  So the probe is never given up while the connect deadline lasts:

* on one ordered stream (stdio, WebSocket, memory), after ``discover_timeout``
  without an answer the ``initialize`` request is written behind the probe,
  and the first answer decides: a probe answer (however late) is adopted and
  the queued ``initialize``'s reply is dropped; an ``initialize`` answer means
  a handshake-era server that ignored the probe.  Such a server costs about
  ``discover_timeout`` on top of its own start-up, never the connect timeout;
* over HTTP the transport's send is the whole exchange: the probe's answer (a
  handshake-era server answers with an error status at once) is in before the race
  could start, so the probe simply has the connect deadline.

A server that answers nothing fails with
:class:`~mcpsync.exceptions.RequestTimeout` at the connect deadline, whatever
the mode (``mode="modern"`` never writes ``initialize``).

The probe and a handshake of its own go through the whole policy chain (interceptors,
retries, tracing) like any request; the race is the probe's way of waiting for its
answer.  The one exception is the ``initialize`` the race writes behind a
still-unanswered probe: it goes straight to the session, so no interceptor sees it, it
is never retried and has no span, and when its answer wins the race that answer is
taken as it is (an interceptor recording handshakes, such as the CLI's era cache,
sees only the probe's failure).

A ``prior_discover=`` result (or the CLI's era cache) skips the probe; the connection
probes again (:func:`reprobe`), once, when the server rejects the remembered era.

Nothing here writes the connection's fields: :func:`negotiate`, :func:`reprobe` and
:func:`handshake` return a :class:`Negotiated` record that the connection applies.  What they
need of the connection (its policies, the session the probe races on) is the :class:`Link`
protocol.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from mcpsync import types
from mcpsync.client.options import ClientOptions
from mcpsync.exceptions import (HTTPStatusError, ProtocolError, RequestCancelled, RequestTimeout, ServerError,
                                ServerUnsupportedProtocolVersion, UnsupportedProtocolVersion)
from mcpsync.rpc.deadline import Deadline
from mcpsync.rpc.session import PendingRequest
from mcpsync.types.modern import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY

from mcpsync.client.policies import Channel

if TYPE_CHECKING:
    from mcpsync.client.policies import Policies

__all__ = ["Link", "Negotiated", "handshake", "negotiate", "reprobe", "rejection", "modern_meta"]

log = logging.getLogger(__name__)


@attrs.frozen
class Negotiated:
    """What the era negotiation agreed on; :class:`~mcpsync.client.connection.Connection` applies it.

    :ivar era: ``"modern"`` (``server/discover``, stateless) or ``"legacy"`` (``initialize``).
    :ivar from_prior: the era comes from ``prior_discover=`` and no request confirmed it yet.
    """

    era: str
    protocol_version: str
    capabilities: types.ServerCapabilities
    server_info: types.Implementation
    instructions: str | None
    discover_result: types.DiscoverResult | None = None
    from_prior: bool = False


class Link(Channel, Protocol):
    """What the negotiation needs of the connection it runs on."""

    @property
    def options(self) -> ClientOptions: ...

    @property
    def policies(self) -> Policies: ...

    @property
    def log_level(self) -> str | None: ...


def modern_meta(options: ClientOptions, version: str, log_level: str | None) -> dict[str, Any]:
    """The ``_meta`` entries every modern request carries."""
    name, client_version = options.client_info
    meta: dict[str, Any] = {PROTOCOL_VERSION_KEY: version, CLIENT_INFO_KEY: {"name": name, "version": client_version},
                            CLIENT_CAPABILITIES_KEY: options.client_capabilities(modern=True)}
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    return meta


#: What :func:`_probe` returns when nothing was answered by the connect deadline.
_SILENT = object()


def negotiate(conn: Link, deadline: Deadline) -> Negotiated:
    """Settle the era and version on *conn* by *deadline*; raises if none can be agreed.

    :raises RequestTimeout: when the server answered nothing by then.
    """
    options = conn.options
    if options.prior_discover is not None:
        prior = _adopt_prior(conn, options.prior_discover)
        if prior is not None:
            return prior
    if options.prior_era == "legacy" and options.allows_handshake():
        # Remembered as a handshake-era server: skip the probe; probe after all if rejected.
        try:
            return handshake(conn, options.offered_versions(), deadline)
        except (ServerError, HTTPStatusError, UnsupportedProtocolVersion) as exc:
            if not options.modern_versions() or not rejection(exc):
                raise
            log.info("the server rejected the handshake it took before (%s); probing", type(exc).__name__)
    return _conclude(conn, _probe(conn, deadline) if options.modern_versions() else None, deadline)


def _conclude(conn: Link, outcome: object, deadline: Deadline, rejected: BaseException | None = None) -> Negotiated:
    """The era after the probe's *outcome* (see :func:`_probe`): the modern one, the handshake
    already under way, or the handshake now with the versions the server named.

    :param rejected: what made a remembered era be probed again (:func:`reprobe`).
    """
    options = conn.options
    offered = options.offered_versions()
    if isinstance(outcome, Negotiated):
        return outcome
    conn.session.default_meta = None  # the probe's modern _meta must not ride on an initialize
    if outcome is _SILENT:
        raise deadline.expired("the server did not answer server/discover: timed out (the connect timeout)"
                               if rejected is None else "the server did not answer server/discover again",
                               "server/discover") from rejected
    if isinstance(outcome, PendingRequest):  # a handshake-era server answered the initialize behind the probe
        return _complete_handshake(conn, offered, conn.session.wait(outcome, deadline), deadline)
    modern = options.modern_versions()
    supported = list(outcome) if isinstance(outcome, tuple) else []
    if not options.allows_handshake():
        raise UnsupportedProtocolVersion(f"server does not speak the stateless protocol ({', '.join(modern)})"
                                         if rejected is None else
                                         "server no longer speaks the remembered protocol version",
                                         requested=modern[0], supported=supported) from rejected
    if isinstance(outcome, tuple):
        offered = tuple(v for v in offered if v in outcome)
        if not offered:
            raise UnsupportedProtocolVersion(
                f"server supports {', '.join(outcome) or 'no version it named'} (and refused {modern[0]});"
                f" this client speaks {', '.join((*modern, *options.offered_versions()))}",
                requested=modern[0], supported=supported) from rejected
    return handshake(conn, offered, deadline)


class _Unanswered(Exception):
    """Carries a probe outcome that is not a result (no answer, or ``initialize`` won) out
    through the policies, which see it as the probe's failure."""

    def __init__(self, outcome: object) -> None:
        super().__init__("server/discover was not answered")
        self.outcome = outcome


def _probe(conn: Link, deadline: Deadline) -> object:
    """Probe ``server/discover``; see the module docstring.

    :returns: the :class:`Negotiated` record when the server is modern; a tuple of the
        versions it named; ``None`` for a handshake-era error answer; the
        :class:`PendingRequest` of an ``initialize`` already sent; or :data:`_SILENT`.
    """
    options = conn.options
    candidates = list(options.modern_versions())
    version = candidates[0]
    race = options.allows_handshake()
    written: list[PendingRequest] = []  # an initialize written behind the probe

    def wait(pending: PendingRequest) -> dict[str, Any]:
        answer = _race(conn, pending, deadline, written) if race else conn.session.wait(pending, deadline)
        if isinstance(answer, dict):
            return answer
        raise _Unanswered(answer)

    try:
        for attempt in range(2):
            conn.session.default_meta = modern_meta(options, version, conn.log_level)
            try:
                result = types.from_wire(types.DiscoverResult,
                                         conn.policies.run(conn, "server/discover", None, deadline, wait=wait))
            except _Unanswered as unanswered:
                written.clear()  # initialize answered first: the handshake era
                return unanswered.outcome
            except ServerUnsupportedProtocolVersion as exc:
                # SEP-2575: retry once with the version we prefer among those the server lists,
                # even when that is the one it just refused (the list is its word on what it
                # speaks); a second refusal ends the probe.
                mutual = [v for v in candidates if v in exc.supported]
                if mutual and attempt == 0:
                    version, race = mutual[0], False  # a modern server: no initialize behind the second probe
                    continue
                log.debug("server/discover: server supports %s", exc.supported)
                return tuple(exc.supported)
            except (ServerError, ProtocolError, HTTPStatusError) as exc:
                # Not a recognised modern answer: a handshake-era server.
                log.debug("server/discover failed (%s); using the initialize handshake", exc)
                return written.pop() if written else None  # the initialize already written, if any
            except RequestTimeout:
                return _SILENT  # the probe could not even be sent in time
            if version not in result.supported_versions:
                mutual = [v for v in candidates if v in result.supported_versions]
                if not mutual:
                    return tuple(result.supported_versions)
                version = mutual[0]
            return _adopt(version, result)
        return None
    finally:
        for initialize in written:
            # The probe decided: a reply to the initialize queued behind it is dropped.
            conn.session.settle(initialize, RequestCancelled("the server/discover probe was answered"))


def _race(conn: Link, probe: PendingRequest, deadline: Deadline, written: list[PendingRequest]) -> object:
    """Wait for the probe on one ordered stream: its raw result (its error is raised),
    :data:`_SILENT`, or, after ``discover_timeout`` without an answer, the answered
    ``initialize`` written behind it (a handshake-era server that ignored the probe)."""
    session = conn.session
    if probe.reply.wait(deadline.remaining(conn.options.discover_timeout)):
        return probe.reply.result()
    if session.closed is None:
        meta, session.default_meta = session.default_meta, None
        try:
            written.append(session.request("initialize", _initialize_params(conn, conn.options.offered_versions()),
                                           deadline))
        except RequestTimeout:
            pass  # could not even be written: the probe still has the deadline
        finally:
            session.default_meta = meta
    if not written:
        probe.reply.wait(deadline.remaining())
        return _give_up(conn, probe)
    initialize = written[0]
    either = threading.Event()
    probe.reply.add_done_callback(lambda _reply: either.set())
    initialize.reply.add_done_callback(lambda _reply: either.set())
    while True:  # a probe answer wins ties
        either.clear()
        if probe.reply.done():
            return probe.reply.result()
        if initialize.reply.done() and initialize.reply.exception() is None:
            _give_up(conn, probe)
            return initialize
        # An initialize refused while the probe is pending: a modern server that has not
        # answered the probe yet; keep waiting for the probe.
        if deadline.passed():
            return _give_up(conn, probe)
        either.wait(deadline.remaining())


def _give_up(conn: Link, probe: PendingRequest) -> object:
    """Settle *probe* locally (a late answer is dropped); its answer if it won the race."""
    if conn.session.settle(probe, RequestTimeout("server/discover got no answer", method="server/discover")):
        return _SILENT
    return probe.reply.result()


def _adopt_prior(conn: Link, prior: types.DiscoverResult) -> Negotiated | None:
    """The era from a remembered ``server/discover`` result; ``None`` if it names no version we speak."""
    mutual = [v for v in conn.options.modern_versions() if v in prior.supported_versions]
    if not mutual:
        return None
    log.debug("skipping the server/discover probe: using the prior result (%s)", mutual[0])
    return attrs.evolve(_adopt(mutual[0], prior), from_prior=True)


def reprobe(conn: Link, exc: BaseException, deadline: Deadline) -> Negotiated:
    """Negotiate again after the server rejected (with *exc*) an era remembered from
    ``prior_discover=``: the probe (or the handshake), by *deadline*."""
    return _conclude(conn, _probe(conn, deadline) if conn.options.modern_versions() else None, deadline, exc)


def rejection(exc: BaseException) -> bool:
    """What a server answers to a request in an era it does not (or no longer) speak(s)."""
    if isinstance(exc, UnsupportedProtocolVersion):
        return True
    if isinstance(exc, ServerError):
        return exc.code in (-32600, -32601)  # a handshake-era server: not initialized / unknown
    return isinstance(exc, HTTPStatusError) and exc.status in (400, 404)


def _adopt(version: str, result: types.DiscoverResult) -> Negotiated:
    """The record of a modern server that speaks *version* and answered ``server/discover`` with *result*."""
    server_info = types.Implementation("", "")
    info = (result.meta or {}).get(SERVER_INFO_KEY)
    if isinstance(info, dict):
        try:
            server_info = types.from_wire(types.Implementation, info)
        except ProtocolError:
            log.debug("ignoring malformed serverInfo in server/discover")
    return Negotiated("modern", version, result.capabilities, server_info, result.instructions, discover_result=result)


def _initialize_params(conn: Link, offered: tuple[str, ...]) -> dict[str, Any]:
    if not offered:
        raise UnsupportedProtocolVersion("server and client share no protocol version",
                                         requested=conn.options.offered_versions()[0])
    name, version = conn.options.client_info
    return {"protocolVersion": offered[0], "capabilities": conn.options.client_capabilities(),
            "clientInfo": {"name": name, "version": version}}


def handshake(conn: Link, offered: tuple[str, ...], deadline: Deadline) -> Negotiated:
    """The ``initialize`` handshake, through the policies, by *deadline*."""
    raw = conn.policies.run(conn, "initialize", _initialize_params(conn, offered), deadline)
    return _complete_handshake(conn, offered, raw, deadline)


def _complete_handshake(conn: Link, offered: tuple[str, ...], raw: dict[str, Any], deadline: Deadline) -> Negotiated:
    result = types.from_wire(types.InitializeResult, raw)
    if result.protocol_version not in offered:
        raise UnsupportedProtocolVersion(
            f"server chose protocol version {result.protocol_version!r}; this client speaks {', '.join(offered)}",
            requested=offered[0],
            supported=[result.protocol_version],
        )
    conn.policies.notify(conn, "notifications/initialized", None, deadline)
    return Negotiated("legacy", result.protocol_version, result.capabilities, result.server_info,
                      result.instructions)
