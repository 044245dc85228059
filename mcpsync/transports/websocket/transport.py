"""The WebSocket transport: MCP over one WebSocket connection (``ws://`` / ``wss://``).

Not a transport of the MCP specification, but one that deployments use: the
TypeScript SDK v1 ships a WebSocket client transport.  Its conventions are
followed here: the ``mcp`` subprotocol is requested (and required of the
server), each JSON-RPC message travels in one text frame, frames that are not
JSON are skipped, and a close of the socket fails every pending call.

Built on the synchronous `websocket-client <https://pypi.org/project/websocket-client/>`_
library (``pip install 'mcpsync[websocket]'``), imported only when a transport
is started.  One named daemon thread reads frames; callers write whole frames
under a lock.  Frame *parsing* is the library's; message reassembly, the size
cap, ping answers and the close handshake are done here so that each of them
is bounded (the library would answer a ping or a close with an unbounded write
from the reader, and it joins fragments by repeated concatenation).

Example::

    t = WebSocketTransport("wss://mcp.example.com/ws", auth=BearerToken("..."))
    t.start(on_message=print, on_close=lambda exc: print("closed:", exc))
    t.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    t.close()

.. versionadded:: 0.1
"""

from __future__ import annotations

import functools
import itertools
import logging
import ssl
import struct
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcpsync.exceptions import ClientClosed, ConnectionClosed, RequestTimeout, ServerStartError
from mcpsync.transports.websocket import frames as frames
from mcpsync.transports.websocket import handshake as _ws_handshake
from mcpsync.transports.websocket.frames import WebSocketClosed
from mcpsync.transports.websocket.reader import FrameReader
from mcpsync import _fork
from mcpsync.rpc.deadline import Deadline
from mcpsync.transports.base import CloseHandler, MessageHandler, Transport, encode_message
from mcpsync.transports.run_state import RunState, join_thread

__all__ = ["WebSocketClosed", "WebSocketTransport", "websocket_transport_factory"]

log = logging.getLogger(__name__)

_TICK = 1.0  # socket timeout: how often a blocked reader or writer re-checks for close
_ids = itertools.count(1)


class WebSocketTransport(Transport):
    """Talk to an MCP server over a WebSocket.

    :param url: ``ws://`` or ``wss://`` URL of the server.
    :param headers: extra handshake headers (e.g. an API key).
    :param auth: a ``requests`` auth object (:class:`requests.auth.AuthBase`,
        e.g. ``mcpsync.auth.BearerToken`` or ``mcpsync.auth.OAuth``) or a
        ``(user, password)`` tuple; it is applied to a request for the
        ``http(s)://`` form of the URL on every connect, and the headers it sets
        go on the handshake.
    :param subprotocols: subprotocols to request; the server must select one
        of them.  ``()`` requests none.
    :param verify: TLS verification: ``True`` (the default CA store), a path
        to a CA bundle, or ``False`` (not verified; never in production).
    :param cert: a client certificate: a path, or ``(cert, key)`` paths.
    :param ssl_context: an :class:`ssl.SSLContext` to use instead (overrides
        ``verify`` and ``cert``).
    :param origin: an ``Origin`` header to send; none by default, as for any
        non-browser client.
    :param connect_timeout: bound on TCP connect, TLS and the upgrade handshake.
    :param write_timeout: bound on one :meth:`send` when the server stops
        reading; ``None`` waits until :meth:`close`.
    :param close_timeout: how long :meth:`close` waits for the server to
        answer the close frame before dropping the connection.
    :param max_message_bytes: largest accepted message (all fragments
        together); a larger one closes the connection (code 1009) with
        :class:`~mcpsync.exceptions.MessageTooLarge`, checked before it is read.
    """

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None, auth: Any = None,
                 subprotocols: Sequence[str] = ("mcp",), verify: bool | str = True,
                 cert: str | tuple[str, str] | None = None, ssl_context: ssl.SSLContext | None = None,
                 origin: str | None = None, connect_timeout: float = 30.0, write_timeout: float | None = 60.0,
                 close_timeout: float = 2.0, max_message_bytes: int = 32 * 1024 * 1024) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise ValueError("a WebSocket URL must look like ws://host/path or wss://host/path")
        if parts.username or parts.password:
            raise ValueError("put credentials in auth= or headers=, not in the URL")
        if max_message_bytes < 1:
            raise ValueError("max_message_bytes must be positive")
        if isinstance(subprotocols, str):
            subprotocols = (subprotocols,)
        headers = dict(headers or {})
        _ws_handshake.check_headers(headers)
        self._write_timeout = write_timeout
        self._close_timeout = close_timeout
        self._max = max_message_bytes
        self._n = next(_ids)
        self._describe = "websocket:" + urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        #: The opening handshake, all but the socket's keeper: run by start().
        self._handshake = functools.partial(
            _ws_handshake.handshake, url, describe=self._describe, headers=headers, auth=auth,
            subprotocols=tuple(subprotocols), sslopt=_ws_handshake.ssl_options(verify, cert, ssl_context),
            origin=origin, connect_timeout=connect_timeout)
        #: closing: set once, by whoever reports on_close; done: the reader ended and the socket is closed;
        #: forked: set in a forked child (:meth:`forget`), the socket is the parent's.
        self._run = RunState()
        self._write_lock = threading.Lock()  # one whole frame at a time
        self._sock_lock = threading.Lock()  # shutdown vs. the final socket close
        self._close_sent = False
        self._ws: Any = None
        self._reader: threading.Thread | None = None
        self._frame_reader: FrameReader | None = None
        #: The subprotocol the server selected, once connected.
        self.subprotocol: str | None = None

    # -- public properties --------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether the connection is closed or closing."""
        return self._run.closed

    def describe(self) -> str:
        """``websocket:<url without query or fragment>`` (a query may carry secrets)."""
        return self._describe

    @property
    def skipped_frames(self) -> int:
        """Frames skipped because they were binary or not JSON (each logged, rate-limited)."""
        reader = self._frame_reader
        return 0 if reader is None else reader.skipped_frames

    # -- lifecycle ----------------------------------------------------------

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        """Connect, run the upgrade handshake and start the reader thread.

        :raises ~mcpsync.exceptions.ServerStartError: if the server cannot be
            reached, TLS fails, or the server does not speak the subprotocol.
        :raises ~mcpsync.exceptions.HTTPStatusError: if the server answers the
            upgrade with an HTTP error (401 for a missing or bad token, say).
        :raises ImportError: if ``websocket-client`` is not installed.
        """
        def keep(ws: Any) -> None:
            self._ws = ws
            _fork.join(self)  # a forked child never writes to or shuts down the parent's socket

        with self._run.starting("WebSocketTransport", on_close):
            self.subprotocol = self._handshake(on_socket=keep)
            self._ws.settimeout(_TICK)
        if self._run.closing.is_set():  # close() ran while we were connecting
            self._teardown()
            raise ClientClosed("the transport was closed while starting")
        self._frame_reader = FrameReader(self._ws, max_bytes=self._max, describe=self._describe, closing=self._run.closing,
                                         on_message=on_message, fail=self._fail, answer_close=self._send_close,
                                         pong=self._pong, teardown=self._teardown)
        self._reader = threading.Thread(target=self._frame_reader.run, name=f"mcpsync-ws-reader-{self._n}", daemon=True)
        try:
            self._reader.start()
        except BaseException as exc:
            self._run.closing.set()
            self._teardown()
            raise ServerStartError(f"cannot start the reader thread for {self._describe}") from exc
        log.info("connected to %s (subprotocol %s)", self._describe, self.subprotocol)

    def close(self) -> None:
        """Send a close frame (1000), wait briefly for the answer, drop the socket.

        Idempotent, callable from any thread (the reader's included), bounded
        by roughly ``close_timeout`` plus a few seconds.  In a forked child it
        only marks the transport closed: the parent's socket is never touched.
        """
        if self._run.forked or self._run.close_unstarted():
            return
        self._fail(ClientClosed("client closed"), close_code=1000)
        if threading.current_thread() is self._reader:
            return  # the reader closes the socket on its way out
        # Give the server its close_timeout to answer our close frame (or the
        # reader to finish a close it started), then cut the socket.
        self._run.done.wait(self._close_timeout)
        self._wake_reader()
        self._run.done.wait(self._close_timeout + 5.0)
        join_thread(self._reader, 2.0)

    def _fail(self, exc: ConnectionClosed, close_code: int | None = None, reason: str = "") -> bool:
        """Enter the closing state once and report ``exc``; ``False`` if someone else did.

        With ``close_code``, a close frame goes out (bounded) *before* anyone
        hears of the failure, so a close() prompted by ``on_close`` cannot cut
        the socket under it.
        """
        if not self._run.enter_closing(exc):
            return False
        if close_code is not None and self._ws is not None:
            self._send_close(close_code, reason)
        self._run.report(exc, self._describe)
        return True

    def _wake_reader(self) -> None:
        with self._sock_lock:
            frames.shut_down(self._ws)

    def _teardown(self) -> None:
        # Writers woken by the shutdown release the write lock at once; the
        # socket is closed only when none is inside send(), so its descriptor
        # cannot be reused under a writer.
        self._wake_reader()
        if self._write_lock.acquire(timeout=5.0):
            try:
                with self._sock_lock:
                    if self._ws is not None:
                        self._ws.shutdown()
            finally:
                self._write_lock.release()
        else:
            log.warning("a writer of %s is stuck; leaving its socket to the GC", self._describe)
        self._run.done.set()

    # -- sending ------------------------------------------------------------

    def forget(self) -> None:
        """Forked child: the socket is the parent's; only stop using it (nothing is sent or shut)."""
        self._run.forked = True

    #: Called in every forked child (:mod:`mcpsync._fork`).
    after_fork_in_child = forget

    def send(self, message: Mapping[str, Any], deadline: Deadline | None = None) -> None:
        """Send one message as one text frame, whole, under the write lock.

        Bounded by ``write_timeout`` and by the call's *deadline*, whichever comes
        first: if nothing of the frame went out the
        connection stays usable and :class:`~mcpsync.exceptions.RequestTimeout`
        is raised; a frame cut in half closes the connection.

        :raises ~mcpsync.exceptions.ForkedClientError: in a forked child.
        :raises ~mcpsync.exceptions.ConnectionClosed: when the connection is gone.
        :raises ValueError: or :class:`TypeError` if ``message`` is not JSON.
        """
        self._run.check_not_forked(self._describe)
        payload = encode_message(message)
        if self._ws is None:
            raise ConnectionClosed("the WebSocket transport has not been started")
        limit = self._write_timeout if deadline is None else deadline.remaining(self._write_timeout)
        try:
            written, total = self._write(frames.TEXT, payload, None if limit is None else time.monotonic() + limit)
        except OSError as exc:
            self._fail(WebSocketClosed(f"cannot write to {self._describe}: {exc}", code=1006))
            self._wake_reader()
            raise self._run.closed_error() from exc
        if written == total:
            return
        if written == 0 and not self._run.closing.is_set():
            method = message.get("method")
            raise RequestTimeout(f"could not write to {self._describe} within {limit}s (the server is not reading)",
                                 method=method if isinstance(method, str) else "", elapsed=limit or 0.0)
        if written:
            self._fail(
                WebSocketClosed(
                    f"{self._describe} stopped reading; a frame was cut short, so the "
                    "connection is closed",
                    code=1006,
                )
            )
            self._wake_reader()  # the stream is corrupt: nothing more is read from it
        raise self._run.closed_error()

    def _write(self, opcode: int, payload: bytes, deadline: float | None) -> tuple[int, int]:
        """Write one frame; return ``(bytes written, frame size)``.

        Stops early (short) at ``deadline`` or once closing, unless the frame
        is the close frame itself.
        """
        data = frames.encode_frame(opcode, payload)
        closing_ok = opcode == frames.CLOSE
        # Wait for the lock by what is left of the deadline, in ticks so that close() frees us.
        while not self._write_lock.acquire(timeout=_TICK if deadline is None
                                           else max(0.0, min(_TICK, deadline - time.monotonic()))):
            if self._run.closing.is_set() and not closing_ok:
                return 0, len(data)
            if deadline is not None and time.monotonic() >= deadline:
                return 0, len(data)
        try:
            sock = self._ws.sock
            if sock is None or (self._run.closing.is_set() and not closing_ok) or self._close_sent:
                return 0, len(data)
            if closing_ok:
                self._close_sent = True
            view, sent = memoryview(data), 0
            while sent < len(data):
                try:
                    sent += sock.send(view[sent:])
                except (TimeoutError, ssl.SSLWantWriteError):
                    if deadline is not None and time.monotonic() >= deadline:
                        break
                    if self._run.closing.is_set() and not closing_ok:
                        break
            return sent, len(data)
        finally:
            self._write_lock.release()

    def _send_close(self, code: int, reason: str = "") -> None:
        """Send a close frame (bounded), unless one went out already."""
        payload = struct.pack("!H", code) + reason.encode("utf-8")[:123]
        try:
            self._write(frames.CLOSE, payload, time.monotonic() + 1.0)
        except OSError:
            pass  # the peer is gone already; nothing left to tell it

    def _pong(self, payload: bytes) -> None:
        self._write(frames.PONG, payload, time.monotonic() + (self._write_timeout or 60.0))



#: The keyword arguments of :class:`WebSocketTransport` that Client.websocket passes on.
_TRANSPORT_OPTIONS = frozenset({"subprotocols", "verify", "cert", "ssl_context", "origin", "connect_timeout", "write_timeout", "close_timeout", "max_message_bytes"})  # fmt: skip


def websocket_transport_factory(url: str, *, headers: Mapping[str, str] | None, auth: Any,
                                options: Mapping[str, Any]) -> tuple[Callable[[], Transport], dict[str, Any]]:
    """Split transport options from client options; return a transport factory.

    Each call of the factory makes a fresh, unconnected transport:
    :class:`~mcpsync.Client` calls it again in a forked child.  Bad arguments
    raise here, at once, not on first use.
    """
    transport_options = {k: v for k, v in options.items() if k in _TRANSPORT_OPTIONS}
    client_options = {k: v for k, v in options.items() if k not in _TRANSPORT_OPTIONS}
    frozen_headers = dict(headers or {})

    def factory() -> Transport:
        return WebSocketTransport(url, headers=frozen_headers, auth=auth, **transport_options)

    factory()  # validate the URL and options now
    return factory, client_options
