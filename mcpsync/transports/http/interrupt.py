"""In-flight HTTP exchanges that another thread can interrupt, headers included.

A thread blocked in ``requests`` waiting for a response's *headers* holds a
socket nobody else can see: ``requests`` hands out the response (and with it
the socket) only once the headers are in.  A server that answers a JSON
request only when its tool is done therefore used to pin the caller until
then, whatever ``cancel()`` or ``close()`` did.

The sessions mcpsync makes itself (:func:`tracking_session`) use connection
classes that, before they write the request and again before they wait for the
response, publish their socket on the :class:`Exchange` the current thread
registered with :func:`begin`.
Whoever holds the exchange can then :meth:`Exchange.abort` it from any thread:
the socket is shut down and the blocked read returns at once.  A *new*
connection publishes its socket before it connects, so an abort also ends a
connect to an address that drops SYNs (which would otherwise wait out the
whole connect timeout).  An exchange aborted before its request is written
(on a new or a reused keep-alive connection alike) never sends it: the server
must not get a request its caller has already given up.  A
``requests.Session`` passed by the user is not changed; with it, a transport
runs each POST on a worker thread instead (see ``streamable.py``), so the caller
still waits only on its reply.

Nothing here imports ``requests``/``urllib3`` at import time.
"""

from __future__ import annotations

import functools
import socket
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["Exchange", "begin", "current", "end", "is_tracking", "shutdown", "socket_of", "tracking_session"]

_local = threading.local()


class Exchange:
    """One request/response on one connection; :meth:`abort` unblocks whoever reads it."""

    __slots__ = ("aborted", "response", "sock")

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        #: The response, once its headers are in (its socket, where the connection was not tracked).
        self.response: requests.Response | None = None
        self.aborted = False

    def attach(self, sock: socket.socket | None) -> None:
        """Called by the connection, in the reading thread, once the request is written."""
        self.sock = sock
        if self.aborted:  # aborted before the socket was known: do it now
            shutdown(sock)

    def abort(self) -> None:
        """Shut the exchange's socket down (from any thread); idempotent."""
        self.aborted = True
        shutdown(self.sock)
        if self.response is not None:
            shutdown(socket_of(self.response))


def socket_of(response: requests.Response) -> socket.socket | None:
    """The socket *response* is read from, when it can be found (else ``None``)."""
    raw = response.raw
    conn = getattr(raw, "_connection", None) or getattr(raw, "connection", None)
    sock = getattr(conn, "sock", None)
    if isinstance(sock, socket.socket):
        return sock
    fp = getattr(getattr(raw, "_fp", None), "fp", None)
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def shutdown(sock: socket.socket | None) -> None:
    """Shut *sock* down (from any thread): a thread blocked reading it returns at once."""
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def begin(exchange: Exchange) -> None:
    """Make *exchange* the one the current thread's next request publishes its socket on."""
    _local.exchange = exchange


def current() -> Exchange | None:
    """The exchange the current thread registered, if any."""
    return getattr(_local, "exchange", None)


def end() -> None:
    """The current thread's request has its response (or failed): stop publishing."""
    _local.exchange = None


def _connect(conn: Any, exchange: Exchange) -> socket.socket:
    """``urllib3``'s ``create_connection``, with the socket on *exchange* before ``connect()``.

    A connect to a black-holed address (SYNs dropped) blocks for the whole
    connect timeout; shutting the socket down from another thread ends it at
    once, so the socket must be known before the connect starts.
    """
    from urllib3.util.connection import _set_socket_options, allowed_gai_family
    from urllib3.util.timeout import _DEFAULT_TIMEOUT

    host = conn._dns_host.strip("[]")
    error: OSError = OSError("getaddrinfo returns an empty list")
    for family, kind, proto, _, address in socket.getaddrinfo(host, conn.port, allowed_gai_family(),
                                                               socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            _set_socket_options(sock, conn.socket_options)
            if conn.timeout is not _DEFAULT_TIMEOUT:
                sock.settimeout(conn.timeout)
            if conn.source_address:
                sock.bind(conn.source_address)
            exchange.attach(sock)  # from here, abort() ends the connect
            if exchange.aborted:  # before it started: shutting down an unconnected socket does nothing
                raise ConnectionAbortedError("the request was aborted before it connected")
            sock.connect(address)
            return sock
        except OSError as exc:
            error = exc
            sock.close()
            if exchange.aborted:
                break
    raise error


@functools.cache  # one set of classes (a race at the first use makes a spare, unused)
def _adapter_class() -> Any:
    """A ``requests`` adapter whose pools make connections that publish their sockets."""
    import requests.adapters
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
    from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError

    class Tracked:
        """What a tracked connection adds to urllib3's (mixed in before it)."""

        def request(self: Any, *args: Any, **kwargs: Any) -> Any:
            # A reused keep-alive connection never reaches _new_conn: without this, a request
            # aborted before it was written would still be sent (its socket attached only in
            # getresponse).  Attaching here also lets abort() end a write that blocks.
            exchange = getattr(_local, "exchange", None)  # current(), inline: every request
            if exchange is not None:
                if self.sock is not None:
                    exchange.attach(self.sock)
                if exchange.aborted:  # urllib3 makes it a ProtocolError, requests a ConnectionError
                    raise ConnectionAbortedError("the request was aborted before it was sent")
            return super().request(*args, **kwargs)  # type: ignore[misc]

        def getresponse(self: Any, *args: Any, **kwargs: Any) -> Any:
            exchange = getattr(_local, "exchange", None)  # current(), inline: every request
            if exchange is not None:
                exchange.attach(self.sock)
            return super().getresponse(*args, **kwargs)  # type: ignore[misc]

        def _new_conn(self: Any) -> socket.socket:
            exchange = getattr(_local, "exchange", None)  # current(), inline: every request
            if exchange is None or self._tunnel_host is not None:
                return super()._new_conn()  # type: ignore[misc,no-any-return]
            # As HTTPConnection._new_conn, which does the same around create_connection.
            try:
                return _connect(self, exchange)
            except socket.gaierror as exc:
                raise NameResolutionError(self.host, self, exc) from exc
            except socket.timeout as exc:
                raise ConnectTimeoutError(
                    self, f"Connection to {self.host} timed out. (connect timeout={self.timeout})") from exc
            except OSError as exc:
                raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc

    pools = {scheme: type(f"Tracked{pool.__name__}", (pool,),
                          {"ConnectionCls": type(conn.__name__, (Tracked, conn), {})})
             for scheme, pool, conn in (("http", HTTPConnectionPool, HTTPConnection),
                                        ("https", HTTPSConnectionPool, HTTPSConnection))}

    def init_poolmanager(self: Any, *args: Any, **kwargs: Any) -> None:
        requests.adapters.HTTPAdapter.init_poolmanager(self, *args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = pools

    return type("TrackingAdapter", (requests.adapters.HTTPAdapter,), {"init_poolmanager": init_poolmanager})


def tracking_session(pool_size: int = 32) -> requests.Session:
    """A ``requests.Session`` whose direct connections publish their sockets (see above).

    Its pools fit many threads plus long-lived streams (*pool_size* connections per host).
    """
    import requests

    session = requests.Session()
    adapter = _adapter_class()(pool_connections=4, pool_maxsize=pool_size)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.mcpsync_tracking = True  # type: ignore[attr-defined]
    return session


def is_tracking(session: requests.Session, proxies: Any) -> bool:
    """Whether *session* was made by :func:`tracking_session` and reaches the server directly.

    :param proxies: the proxies in effect for the URL (a proxied connection is not tracked).
    """
    return bool(getattr(session, "mcpsync_tracking", False)) and not proxies
