"""``Client.http(...)``'s transport choice and option split.

``transport="auto"`` means Streamable HTTP with the legacy HTTP+SSE fallback,
or WebSocket when the URL is ``ws://``/``wss://``; ``"websocket"`` forces the
WebSocket transport (which speaks its own options; a ``requests.Session``
means nothing to it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcpsync import _fork
from mcpsync.transports.http import wire
from mcpsync.transports.base import Transport

__all__ = ["http_transport_factory"]



def http_transport_factory(url: str, *, auth: Any, headers: Mapping[str, str] | None, session: Any, transport: str,
                           options: dict[str, Any]) -> tuple[Callable[[], Transport], dict[str, Any]]:
    """Split transport options from client options; return a transport factory.

    Each call of the factory makes a fresh transport (a fresh connection pool,
    unless a session was given): :class:`~mcpsync.Client` calls it again in a
    forked child.  A given ``requests.Session`` is shared, so after a fork its
    pools are cleared in the child (closing, never shutting down, the parent's
    sockets).

    :raises ValueError: for an unknown *transport*, a URL of the wrong scheme,
        or a *session* with the WebSocket transport.
    """
    if transport == "websocket" or (transport == "auto" and url.lower().startswith(("ws://", "wss://"))):
        if session is not None:
            raise ValueError("a requests.Session cannot be used with the WebSocket transport")
        from mcpsync.transports.websocket.transport import websocket_transport_factory

        return websocket_transport_factory(url, headers=headers, auth=auth, options=options)

    from mcpsync.transports.http.streamable import StreamableHTTPTransport
    from mcpsync.transports.http.auto import LEGACY_ONLY, STREAMABLE_ONLY, TRANSPORT_OPTIONS, AutoHTTPTransport, without
    from mcpsync.transports.http.legacy import LegacySSETransport

    if transport not in ("auto", "streamable-http", "sse"):
        raise ValueError("transport must be 'auto', 'streamable-http', 'sse' or 'websocket'")
    transport_options = {k: v for k, v in options.items() if k in TRANSPORT_OPTIONS}
    client_options = without(options, TRANSPORT_OPTIONS)
    wire.origin(url)  # validate early
    forked = _Forked()

    def factory() -> Transport:
        if session is not None and forked.flag:
            forked.flag = False
            for adapter in session.adapters.values():
                pool = getattr(adapter, "poolmanager", None)
                if pool is not None:
                    pool.clear()
        base = {"auth": auth, "headers": headers, "session": session}
        if transport == "sse":
            return LegacySSETransport(url, **base, **without(transport_options, STREAMABLE_ONLY))
        if transport == "streamable-http":
            return StreamableHTTPTransport(url, **base, **without(transport_options, LEGACY_ONLY))
        return AutoHTTPTransport(url, **base, **transport_options)

    factory.forked = forked  # type: ignore[attr-defined]  # held as long as the factory is
    return factory, client_options


class _Forked:
    """Set in a forked child (:mod:`mcpsync._fork`): the next transport lets go of the shared
    session's pooled connections, which are the parent's (closing, never shutting down, them)."""

    def __init__(self) -> None:
        self.flag = False
        _fork.join(self)

    def after_fork_in_child(self) -> None:
        self.flag = True
