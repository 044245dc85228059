"""An in-process transport: two connected ends, for tests and :mod:`mcpsync.testing`.

:func:`create_pair` returns two :class:`MemoryTransport` objects wired to each
other.  What one end sends, the other receives.  Messages cross as encoded
JSON bytes (via :func:`~mcpsync.transports.base.encode_message`) and are
decoded on the receiving side, so nothing is shared by reference and input
that could not cross a real wire (``NaN``, objects JSON cannot represent)
raises in the *sender*, exactly as with stdio or HTTP.

Each end delivers what it receives on its own named daemon thread
(``mcpsync-memory-<n>``), never on the sender's thread, so a test using this
transport sees the same threading as with a real connection.

Closing either end closes both: the closer's ``on_close`` gets
:class:`~mcpsync.exceptions.ClientClosed`, the other side's gets
:class:`~mcpsync.exceptions.ConnectionClosed` after every message sent before
the close has been delivered (like a pipe reaching EOF).

Example::

    client_end, server_end = create_pair()
    server_end.start(lambda msg: server_end.send({"echo": msg}), lambda exc: None)
    client_end.start(print, print)
    client_end.send({"jsonrpc": "2.0", "method": "ping", "id": 1})
    client_end.close()

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import itertools
import json
import logging
import queue
import threading
from typing import Any, Mapping

from ..exceptions import ClientClosed, ConnectionClosed
from .base import CloseHandler, Deadline, MessageHandler, Transport, encode_message
from .run_state import join_thread

__all__ = ["MemoryTransport", "create_pair"]

_log = logging.getLogger(__name__)

#: How long :meth:`MemoryTransport.close` waits for each delivery thread.
CLOSE_JOIN_TIMEOUT = 5.0

_ids = itertools.count(1)  # next() on a count is atomic: no lock


class MemoryTransport(Transport):
    """One end of an in-process connection made by :func:`create_pair`.

    Thread-safe like every transport: :meth:`send` and :meth:`close` may be
    called from any thread.  Create ends with :func:`create_pair`, not directly.
    """

    def __init__(self, label: str = "memory") -> None:
        self._label = label
        self._peer: MemoryTransport | None = None
        #: Encoded messages, then the reason this end closed (the end of the queue).
        self._inbox: queue.SimpleQueue[bytes | ConnectionClosed] = queue.SimpleQueue()
        # One lock per connection (shared by both ends, set by create_pair) so
        # "closed" flips for both ends atomically with respect to send().
        self._lock = threading.Lock()
        self._closed = False
        self._closed_by_me = False
        self._thread: threading.Thread | None = None

    # -- the Transport ABC -------------------------------------------------

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        """Begin delivering received messages on a new daemon thread.

        Messages the peer sent before this call are queued and delivered first.

        :raises RuntimeError: if called twice.
        """
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("MemoryTransport.start() called twice")
            thread = threading.Thread(target=self._deliver, args=(on_message, on_close),
                                      name=f"mcpsync-memory-{next(_ids)}", daemon=True)
            # Started under the lock: a close() racing start() must never
            # join a thread that is not running yet.
            thread.start()
            self._thread = thread

    def send(self, message: Mapping[str, Any], deadline: Deadline | None = None) -> None:
        """Encode *message* and queue it for the peer (never blocks: no deadline to honour).

        :raises ValueError: for NaN/Infinity or invalid Unicode (nothing is sent).
        :raises TypeError: for values JSON cannot represent (nothing is sent).
        :raises ~mcpsync.exceptions.ConnectionClosed: when either end was closed.
        """
        data = encode_message(message)
        peer = self._peer
        with self._lock:
            if self._closed or peer is None:
                raise ConnectionClosed(f"{self._label}: connection closed")
            # Put under the lock so a concurrent close() cannot slip its EOF
            # marker in front of a message whose send() already succeeded.
            peer._inbox.put(data)

    def close(self) -> None:
        """Close both ends; idempotent, bounded, callable from any thread.

        The closer's ``on_close`` receives :class:`~mcpsync.exceptions.ClientClosed`
        and messages still queued for it are dropped; the peer first receives
        everything already sent, then ``on_close`` with
        :class:`~mcpsync.exceptions.ConnectionClosed`.
        """
        peer = self._peer
        with self._lock:
            if not self._closed:
                self._closed = True
                self._closed_by_me = True
                self._inbox.put(ClientClosed(f"{self._label}: closed by this side"))
                if peer is not None:
                    peer._closed = True
                    peer._inbox.put(ConnectionClosed(f"{peer._label}: peer closed the connection"))
        self._join()
        if peer is not None:
            peer._join()

    def describe(self) -> str:
        """A short description for logs, e.g. ``memory (client end)``."""
        return f"memory ({self._label})"

    # -- internals ---------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether this connection has been closed (by either end)."""
        return self._closed

    def _join(self) -> None:
        thread = self._thread
        join_thread(thread, CLOSE_JOIN_TIMEOUT)
        if thread is not None and thread is not threading.current_thread() and thread.is_alive():
            _log.warning("%s: delivery thread %s still busy after %.1fs (a callback is blocking)", self.describe(),
                         thread.name, CLOSE_JOIN_TIMEOUT)

    def _deliver(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        """Body of the delivery thread: decode and hand over until EOF."""
        while True:
            item = self._inbox.get()
            if isinstance(item, ConnectionClosed):
                try:
                    on_close(item)
                except BaseException:  # the thread must end cleanly whatever the callback does
                    _log.exception("%s: on_close callback raised", self.describe())
                return
            if self._closed_by_me:
                continue  # closed on purpose: what is still queued is not wanted
            try:
                message = json.loads(item.decode("utf-8"))
            except ValueError:  # cannot happen with encode_message, but a reader must never die
                _log.warning("%s: dropping undecodable message", self.describe())
                continue
            try:
                on_message(message)
            except BaseException:
                _log.exception("%s: on_message callback raised", self.describe())


def create_pair(labels: tuple[str, str] = ("client end", "server end"),) -> tuple[MemoryTransport, MemoryTransport]:
    """Create two connected :class:`MemoryTransport` ends.

    :param labels: names used in logs and error messages for the two ends.
    :returns: ``(a, b)``: what ``a`` sends, ``b`` receives, and vice versa.
    """
    a = MemoryTransport(labels[0])
    b = MemoryTransport(labels[1])
    a._lock = b._lock = threading.Lock()  # one lock for the connection: see __init__
    a._peer, b._peer = b, a
    return a, b
