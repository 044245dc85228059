"""A client's connection over time: connect on first use, replace after a fork or a death, close once.

:class:`Lifecycle` is composed by :class:`~mcpsync.Client`.  It opens the connection
on first use (one thread connects; the others wait for it, each within its own
deadline), and opens a new one when the current one cannot be used any more:

* in a forked child (it joins the after-fork registry, :mod:`mcpsync._fork`): the
  parent's connection is forgotten without touching it, and a client made with
  ``Client.stdio``/``http``/``websocket`` opens its own; one made from a bare transport
  object cannot rebuild it and raises :class:`~mcpsync.ForkedClientError`;
* after the connection died (the server crashed or was restarted): the call that saw
  :class:`~mcpsync.ConnectionClosed` raised it (a tool call is not safe to repeat
  blindly); the next call connects again, when the client can make a transport.

:meth:`Lifecycle.close` is idempotent, bounded, and safe from a signal handler.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable

from mcpsync import _fork
from mcpsync.client.connection import Connection
from mcpsync.exceptions import ClientClosed, ForkedClientError, McpError
from mcpsync.rpc.deadline import Deadline
from mcpsync.rpc.session import in_call
from mcpsync.transports.base import Transport

__all__ = ["Lifecycle"]

log = logging.getLogger(__name__)

#: How often a thread waiting for another thread's connect looks at close() and its deadline.
_CONNECT_POLL = 0.1
#: Longest wait of a later close() for the close a signal handler started: that one is
#: bounded by the transport's graces (stdio: ``close_grace`` + ``terminate_grace``, 4 s by
#: default), and a caller must not wait on a closer that hangs in a broken transport.
_CLOSER_WAIT = 5.0


class Lifecycle:
    """The current connection of a client, made by *make* from a transport.

    :param transport: the first transport (``None``: *factory* makes it).
    :param factory: makes a fresh transport (after a fork, after a death); ``None``: cannot.
    :param make: wraps a transport in an unopened :class:`Connection`.
    :param connected: called with each connection once it is open, and the connect's deadline
        (holding no lock).
    :param closing: called once by :meth:`close`, before the connections close.
    """

    def __init__(self, transport: Transport | None, factory: Callable[[], Transport] | None,
                 make: Callable[[Transport], Connection], connected: Callable[[Connection, Deadline], None],
                 closing: Callable[[], None]) -> None:
        self._transport = transport
        self._factory = factory
        self._make = make
        self._connected = connected
        self._closing = closing
        #: The open connection (``None``: none yet, or forgotten).
        self.conn: Connection | None = None
        #: The parent's connection, in a forked child, until the next use lets go of it.
        self._forked: Connection | None = None
        self.connecting: Connection | None = None
        #: Connections whose failed connect is still being stopped on a closer thread.
        self._discarded: list[Connection] = []
        self.connect_lock = threading.Lock()
        self._state_lock = threading.RLock()
        #: The thread running the handshake (an interceptor of it must not wait for itself).
        self._connect_owner: threading.Thread | None = None
        self.closed = False
        self._closer: threading.Thread | None = None
        #: Connections opened in this process (a new one after a fork or a death).
        self.generation = 0
        _fork.join(self)

    def after_fork_in_child(self) -> None:
        """In a forked child: new locks, no connect in progress, the parent's connection set aside.

        Called by :mod:`mcpsync._fork`: a parent thread may have held these locks at the
        fork, in the middle of a connect, and no thread of the child would ever release
        them.  Nothing of the parent's connection is touched here (its session's locks
        are the parent's threads'): the next use lets go of it.
        """
        self.connect_lock = threading.Lock()
        self._state_lock = threading.RLock()
        self._connect_owner = None
        if self.conn is not None:
            self._forked, self.conn = self.conn, None
        self.connecting, self._discarded, self.generation = None, [], 0

    def get(self, deadline: Deadline) -> Connection:
        """The open connection, opening it first (by *deadline*) when needed."""
        conn = self.conn
        if conn is not None and conn.session._closed is None:
            return conn
        if self._connect_owner is threading.current_thread():
            # An interceptor of the handshake asked for the connection it is making.
            raise McpError("the client is still connecting: an interceptor of the handshake called it")
        # One thread connects; the others wait here, each within its own deadline.  close()
        # never takes this lock, so it can interrupt a slow handshake from any thread, and it
        # releases the waiters too.
        self._wait_for_connect_lock(deadline)
        try:
            return self._connect_holding(deadline)
        finally:
            self.connect_lock.release()

    def _wait_for_connect_lock(self, deadline: Deadline) -> None:
        lock = self.connect_lock
        if lock.acquire(False):
            return
        while True:
            if self.closed:
                raise ClientClosed("client is closed")
            wait = deadline.remaining(_CONNECT_POLL)
            if not wait:
                raise deadline.expired("no connection by the call's timeout: another thread is still connecting")
            if lock.acquire(True, wait):
                return

    def _connect_holding(self, deadline: Deadline) -> Connection:
        with self._state_lock:
            if self.closed:
                raise ClientClosed("client is closed")
            conn = self.conn
            if conn is not None and conn.alive:
                return conn
            if conn is not None and self._factory is None:
                return conn  # dead, and we cannot make another: its calls raise why it died
            conn = self.connecting = self._make(self._next_transport())
        self._connect_owner = threading.current_thread()
        try:
            conn.open(deadline)
        except BaseException:
            with self._state_lock:  # close() waits for their servers to be gone
                self._discarded = [c for c in (*self._discarded, conn) if c.closing_in_background]
            raise
        finally:
            self._connect_owner = None
            with self._state_lock:
                self.connecting = None
        with self._state_lock:
            if self.closed:
                conn.close()
                raise ClientClosed("client was closed while connecting")
            old, self.conn = self.conn, conn
            self.generation += 1
        if old is not None:
            old.close()  # dead already: this only stops its workers
        self._connected(conn, deadline)
        return conn

    def _next_transport(self) -> Transport:
        forked, self._forked = self._forked, None
        if forked is not None:
            # The parent's pipes, sockets and threads are not ours.
            forked.abandon()
            if self._factory is None:
                raise ForkedClientError(
                    "this client was connected before os.fork(); create a new Client in the child process"
                    " (or construct it with Client.stdio/Client.http, which reconnect by themselves)")
            self._transport = None
        transport, self._transport = self._transport, None
        if transport is None:
            if self._factory is None:
                raise ClientClosed("client has no transport")
            transport = self._factory()
        return transport

    def close(self) -> None:
        """Close the connection; idempotent, callable from any thread, bounded in time.

        On return every server this client started (a failed connect's too) is gone.
        Called on a thread that is itself inside a call (a signal handler that
        interrupted it, an interceptor), it only starts the close on a thread of its own
        and returns: the interrupted frame may hold the locks a close needs.  A later
        ``close()`` elsewhere waits for that thread (at most 5 s).
        """
        deferred = in_call()
        with self._state_lock:
            closed, self.closed = self.closed, True
            conns = [c for c in (self.conn, self.connecting, *self._discarded) if c is not None]
            self.conn, self._discarded = None, []
            transport, self._transport = self._transport, None
            if deferred and not closed:
                self._closer = threading.Thread(target=self._close_all, args=(conns, transport),
                                                name="mcpsync-close", daemon=True)
            closer = self._closer
        if closed:  # wait (bounded) for a close a signal handler started; not at finalization
            if closer and closer is not threading.current_thread() and not (deferred or sys.is_finalizing()):
                closer.join(_CLOSER_WAIT)
            return
        if deferred and closer is not None:
            try:
                closer.start()
                return
            except RuntimeError:  # no new threads (interpreter exiting): close here
                self._closer = None
        self._close_all(conns, transport)

    def _close_all(self, conns: list[Connection], transport: Transport | None) -> None:
        self._closing()
        for conn in conns:
            conn.close()
        if transport is not None:
            transport.close()
