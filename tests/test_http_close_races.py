"""Races between close()/abort and requests about to start, on the HTTP transports.

Each test pins one interleaving with an event (never a sleep): a request that reaches the
transport after close() began, a 404 that arrives after close(), an exchange aborted before
its request is written on a reused keep-alive connection, the wait for the listening GET, and
the swap to the legacy transport.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import requests
from http_fault import Conn, FaultServer, Request, handshake

import mcpsync
from mcpsync.exceptions import ClientClosed
from mcpsync.rpc.deadline import Deadline
from mcpsync.transports.http import auto as auto_module
from mcpsync.transports.http import interrupt
from mcpsync.transports.http.auto import AutoHTTPTransport
from mcpsync.transports.http.legacy import LegacySSETransport
from mcpsync.transports.http.streamable import StreamableHTTPTransport

pytestmark = pytest.mark.timeout(60)

#: How long close() may take to release a waiting thread (the project's "about a second").
SLACK = 1.5

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _ignore(*args: Any) -> None:
    pass


def _handshake(transport: StreamableHTTPTransport) -> None:
    transport.start(_ignore, _ignore)
    transport.send(INITIALIZE, Deadline(10))


def _threads(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix) and t.is_alive()]


# -- a request that reaches the transport after close() is not sent -------------------------------


def test_a_send_that_starts_after_close_is_not_sent() -> None:
    deleted = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        if request.method == "DELETE":
            deleted.set()  # close() has aborted what was in flight by now
            conn.respond(200, b"", ctype="text/plain")
        elif not handshake(request, conn):
            conn.respond(404, b"", ctype="text/plain")

    with FaultServer(handler) as server:
        transport = StreamableHTTPTransport(server.url, listen=False)
        outcome: list[BaseException] = []

        def late() -> None:  # e.g. request_async's sender, scheduled only once close() is under way
            assert deleted.wait(10)
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}
            outcome.append(pytest.raises(ClientClosed, transport.send, call, Deadline(10)).value)

        sender = threading.Thread(target=late)
        try:
            _handshake(transport)
            sender.start()
            transport.close()
            sender.join(10)
        finally:
            transport.close()
        assert outcome and isinstance(outcome[0], ClientClosed)
        assert server.rpc("tools/call") == [], "a request was POSTed after close()"


def test_a_404_answered_after_close_does_not_re_initialize() -> None:
    # A session of the user's: close() cannot abort its POST, so the 404 does arrive after close().
    got_call, deleted = threading.Event(), threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        if request.method == "DELETE":
            deleted.set()
            conn.respond(200, b"", ctype="text/plain")
        elif request.rpc_method == "tools/call":
            got_call.set()
            deleted.wait(10)  # answered only once close() has deleted the session
            conn.respond(404, b"", ctype="text/plain")
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, requests.Session() as session:
        client = mcpsync.Client.http(server.url, transport="streamable-http", mode="legacy", session=session,
                                     listen=False, timeout=10)
        outcome: list[BaseException] = []
        caller = threading.Thread(target=lambda: outcome.append(
            pytest.raises(mcpsync.McpError, client.call_tool, "x").value))
        try:
            client.connect()
            caller.start()
            assert got_call.wait(10)
            client.close()
            caller.join(10)
            for thread in _threads("mcpsync-http-post-"):
                thread.join(10)
        finally:
            client.close()
        assert outcome and isinstance(outcome[0], ClientClosed)
        assert len(server.rpc("initialize")) == 1, "a session was re-initialized after close()"


# -- an exchange aborted before its request is written, on a reused connection ---------------------


def test_aborted_exchange_sends_nothing_on_a_reused_keep_alive_connection() -> None:
    def handler(request: Request, conn: Conn) -> None:
        conn.respond(200, {"ok": True})

    with FaultServer(handler) as server:
        session = interrupt.tracking_session(4)
        try:
            assert session.get(server.url, timeout=5).json() == {"ok": True}  # the pool keeps the connection
            exchange = interrupt.Exchange()
            exchange.abort()  # e.g. close() ran between registering the request and sending it
            interrupt.begin(exchange)
            try:
                with pytest.raises(requests.ConnectionError):
                    session.post(server.url, data=b"{}", timeout=5)
            finally:
                interrupt.end()
        finally:
            session.close()
        # The server's thread for the one connection ends once it sees the connection close:
        # whatever was written on it has been recorded by then.
        for thread in list(server._threads[1:]):
            thread.join(10)
        assert len(server._threads) == 2, "the aborted request should have used the pooled connection"
        assert [r.method for r in server.requests] == ["GET"], "the aborted request was sent"


# -- the wait for the listening GET: bounded by the call's deadline, ended by close() ------------


def _held_get_server(got_get: threading.Event) -> FaultServer:
    def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET":
            got_get.set()
            conn.hold()  # no headers: the listening stream is never answered
        else:
            handshake(request, conn)

    return FaultServer(handler)


def test_initialized_waits_for_the_listening_get_only_until_its_deadline() -> None:
    got_get = threading.Event()
    with _held_get_server(got_get) as server:
        transport = StreamableHTTPTransport(server.url)  # connect_timeout 10: the old wait was 5 s
        try:
            _handshake(transport)
            start = time.monotonic()
            transport.send(INITIALIZED, Deadline(0.3))
            assert time.monotonic() - start < 0.3 + SLACK
            assert got_get.wait(10)  # sent; the server thread may parse it after our deadline
        finally:
            transport.close()


@pytest.mark.parametrize("own_session", [True, False], ids=["own-session", "user-session"])
def test_close_ends_the_wait_for_the_listening_get(own_session: bool) -> None:
    got_get = threading.Event()
    with _held_get_server(got_get) as server, requests.Session() as user_session:
        # With a session of the user's, the GET itself cannot be aborted: the wait must end anyway.
        transport = StreamableHTTPTransport(server.url, session=None if own_session else user_session)
        closed_at: list[float] = []

        def close_once_the_get_is_held() -> None:
            if got_get.wait(10):
                closed_at.append(time.monotonic())
                transport.close()

        closer = threading.Thread(target=close_once_the_get_is_held, name="test-closer")
        try:
            _handshake(transport)
            closer.start()
            transport.send(INITIALIZED)  # no deadline: only close() ends the wait early
            returned = time.monotonic()
            closer.join(10)
            assert closed_at and returned - closed_at[0] < SLACK
            if own_session:  # close() aborted the GET too: its thread is gone, not left waiting
                assert not _threads(f"mcpsync-http-get-{transport._n}.")
        finally:
            transport.close()
            closer.join(10)


# -- close() during the fallback to legacy HTTP+SSE ----------------------------------------------


def test_close_before_the_swap_to_legacy_keeps_the_legacy_stream_from_opening(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET":
            conn.start_sse()
            conn.hold()  # no endpoint event: a started legacy transport waits endpoint_timeout
        else:
            conn.respond(404, b"", ctype="text/plain")  # initialize refused: fall back

    transport: AutoHTTPTransport | None = None

    class ClosedMeanwhile(LegacySSETransport):
        """The fallback transport, made just as another thread closes the auto transport."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            assert transport is not None
            transport.close()

    monkeypatch.setattr(auto_module, "LegacySSETransport", ClosedMeanwhile)
    with FaultServer(handler) as server:
        transport = AutoHTTPTransport(server.url, listen=False, endpoint_timeout=5.0)
        try:
            transport.start(_ignore, _ignore)
            start = time.monotonic()
            with pytest.raises(ClientClosed):
                transport.send(INITIALIZE, Deadline(10))
            assert time.monotonic() - start < SLACK
            assert [r.method for r in server.requests] == ["POST"], "the legacy stream opened after close()"
        finally:
            transport.close()
