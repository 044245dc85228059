"""Deadlines over HTTP and WebSocket: the cells issue 12 left untested (see docs/reliability.rst).

* C2: ``close()`` ends a connect to an address that drops SYNs (a 127.0.0.1 port whose listen
  backlog is full: Linux drops further SYNs, so ``connect()`` hangs as behind a black hole).
* C9: a JSON body that trickles in and then stalls ends at the call's deadline, not one whole
  read wait later (raw-socket server).
* A9/A10: a slow ``initialize`` over HTTP (the official SDK server behind a delay), the legacy
  HTTP+SSE transport's connect, close and ``request_async`` (the official SDK's SSE server and
  raw-socket servers), and a WebSocket write to a peer that stopped reading.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request, handshake

import mcpsync
from mcpsync.rpc.deadline import Deadline

pytestmark = pytest.mark.timeout(90)

#: A deadline is met when the caller is back within this many seconds of it.
SLACK = 1.0


@contextlib.contextmanager
def black_hole() -> Iterator[str]:
    """``http://127.0.0.1:PORT``, where a connect hangs: the port's listen backlog is full."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    address = listener.getsockname()
    filler = socket.create_connection(address, timeout=5)  # fills the backlog of one
    probe = socket.socket()
    probe.settimeout(0.3)
    try:
        with contextlib.suppress(TimeoutError):
            probe.connect(address)
            pytest.fail("a full listen backlog does not drop SYNs here: no black hole to test with")
        yield f"http://{address[0]}:{address[1]}/mcp"
    finally:
        probe.close()
        filler.close()
        listener.close()


def _released_by_close(client: mcpsync.Client, call: Any, started: threading.Event | None = None,
                       settle: float = 0.3) -> tuple[BaseException, float]:
    """Run *call* on a thread, close *client* once it is blocked; (its error, seconds close -> return)."""
    outcome: list[BaseException] = []
    returned: list[float] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            outcome.append(exc)
        returned.append(time.monotonic())

    caller = threading.Thread(target=run, name="caller")
    caller.start()
    try:
        if started is not None:
            assert started.wait(10)
        else:
            # Nothing observable tells that a connect is under way (the kernel drops the SYNs):
            # give the caller time to get there. Closing earlier must release it all the same.
            caller.join(settle)
        closing = time.monotonic()
    finally:
        client.close()  # also when the call never got there: the caller must not stay blocked
        caller.join(10)
    assert not caller.is_alive(), "close() did not release the caller"
    assert outcome, "the call returned although it could not have been answered"
    return outcome[0], returned[0] - closing


# -- C2: close() interrupts a black-holed connect --------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_c2_close_interrupts_a_connect_to_an_address_that_drops_syns(mode: str) -> None:
    with black_hole() as url:
        client = mcpsync.Client.http(url, transport="streamable-http", mode=mode, timeout=30)
        error, after = _released_by_close(client, lambda: client.call_tool("x"))
        assert after < SLACK, f"close() released the connecting caller after {after:.2f} s"
        assert isinstance(error, mcpsync.ClientClosed), repr(error)


def test_c2_a_connect_that_hangs_ends_at_the_call_deadline() -> None:
    with black_hole() as url:
        client = mcpsync.Client.http(url, transport="streamable-http", mode="legacy", timeout=30)
        try:
            start = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                client.call_tool("x", timeout=1.0)
            assert time.monotonic() - start < 1.0 + SLACK
        finally:
            client.close()


# -- C9: a trickling JSON body ends at the deadline -------------------------------------------------


class TricklingJson:
    """tools/call is answered with a JSON body sent 1 byte per 0.3 s, then nothing (never closed)."""

    def __init__(self, trickle: int = 6) -> None:
        self.trickle = trickle

    def __call__(self, request: Request, conn: Conn) -> None:
        if handshake(request, conn):
            return
        body = b'{"jsonrpc": "2.0", "id": %d, "result": {"content": []}}' % request.body["id"]
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        for byte in body[:self.trickle]:
            if conn.server.stopping.wait(0.3):
                return
            conn.send(bytes([byte]))
        conn.hold()


def test_c9_json_body_that_trickles_then_stalls_ends_at_the_call_deadline() -> None:
    with FaultServer(TricklingJson()) as server:
        with mcpsync.Client.http(server.url, transport="streamable-http", mode="legacy", timeout=30) as client:
            client.connect()
            start = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                # 6 bytes in 1.8 s, then silence: the read after the last byte must end by 2 s.
                client.call_tool("x", timeout=2.0)
            elapsed = time.monotonic() - start
            assert elapsed < 2.0 + SLACK, f"came back after {elapsed:.2f} s"


# -- A10: a slow initialize over Streamable HTTP ---------------------------------------------------


class SlowInitialize:
    """A Streamable HTTP server whose ``initialize`` gets no answer until the server stops."""

    def __init__(self) -> None:
        self.arrived = threading.Event()

    def __call__(self, request: Request, conn: Conn) -> None:
        if request.rpc_method == "initialize":
            self.arrived.set()
            conn.hold()
        else:
            handshake(request, conn)


def test_a10_slow_initialize_over_http_ends_at_the_call_deadline() -> None:
    with FaultServer(SlowInitialize()) as server:
        client = mcpsync.Client.http(server.url, transport="streamable-http", mode="legacy", timeout=30)
        try:
            start = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                client.call_tool("x", timeout=1.0)  # the lazy connect is part of the call
            assert time.monotonic() - start < 1.0 + SLACK
        finally:
            client.close()


def test_a10_close_releases_a_caller_in_a_slow_http_initialize() -> None:
    slow = SlowInitialize()
    with FaultServer(slow) as server:
        client = mcpsync.Client.http(server.url, transport="streamable-http", mode="legacy", timeout=30)
        error, after = _released_by_close(client, lambda: client.call_tool("x"), slow.arrived)
        assert after < SLACK
        assert isinstance(error, mcpsync.ClientClosed), repr(error)


# -- D1-D3: legacy HTTP+SSE connect, close and request_async ---------------------------------------


class LegacyServer:
    """2024-11-05 HTTP+SSE: ``GET`` opens the stream and names ``/messages``; POSTs get 202 and
    their replies on the stream.

    :param endpoint: send the ``endpoint`` event (else the stream stays silent).
    :param hold_get: give the ``GET`` no headers at all.
    :param calls: what a ``tools/call`` POST gets: ``"reply"``, ``"silence"`` (202, never a
        reply) or ``"hold"`` (no headers).
    """

    def __init__(self, *, endpoint: bool = True, hold_get: bool = False, calls: str = "reply") -> None:
        self.endpoint = endpoint
        self.hold_get = hold_get
        self.calls = calls
        self.got = threading.Event()  # the GET (hold_get) or a tools/call arrived
        self.ready = threading.Event()
        self.stream: Conn | None = None

    def __call__(self, request: Request, conn: Conn) -> None:
        if request.method == "GET":
            if self.hold_get:
                self.got.set()
                conn.hold()
                return
            conn.start_sse()
            if self.endpoint:
                conn.event("event: endpoint\ndata: /messages\n\n")
            self.stream = conn
            self.ready.set()
            conn.hold()
            return
        if request.rpc_method == "tools/call":
            self.got.set()
            if self.calls == "hold":
                conn.hold()
                return
        conn.respond(202, b"", ctype="text/plain")
        if "id" not in request.body or (request.rpc_method == "tools/call" and self.calls == "silence"):
            return
        result = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "legacy", "version": "0"}} if request.rpc_method == "initialize" else {}
        assert self.ready.wait(5) and self.stream is not None
        self.stream.message({"jsonrpc": "2.0", "id": request.body["id"], "result": result})


def _legacy(server: FaultServer) -> mcpsync.Client:
    return mcpsync.Client.http(server.url + "/sse", transport="sse", timeout=30)


def test_d1_legacy_connect_without_an_endpoint_event_ends_at_the_call_deadline() -> None:
    with FaultServer(LegacyServer(endpoint=False)) as server:
        client = _legacy(server)
        try:
            start = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                client.call_tool("x", timeout=1.0)  # not the 10 s endpoint_timeout
            assert time.monotonic() - start < 1.0 + SLACK
        finally:
            client.close()


def test_d1_close_releases_a_legacy_connect_whose_get_gets_no_headers() -> None:
    legacy = LegacyServer(hold_get=True)
    with FaultServer(legacy) as server:
        client = _legacy(server)
        error, after = _released_by_close(client, lambda: client.call_tool("x"), legacy.got)
        assert after < SLACK
        assert isinstance(error, mcpsync.ClientClosed), repr(error)


def test_d3_close_releases_a_legacy_caller_waiting_for_its_reply() -> None:
    legacy = LegacyServer(calls="silence")
    with FaultServer(legacy) as server:
        client = _legacy(server)
        client.connect()
        error, after = _released_by_close(client, lambda: client.call_tool("x"), legacy.got)
        assert after < SLACK
        assert isinstance(error, mcpsync.ClientClosed), repr(error)


def _post_threads() -> list[threading.Thread]:
    # request_async sends on a thread of the session's (the POST is that send).
    return [t for t in threading.enumerate() if t.name.startswith("mcpsync-send-")]


def test_d2_legacy_request_async_posts_on_a_thread_that_close_ends() -> None:
    legacy = LegacyServer(calls="hold")
    with FaultServer(legacy) as server:
        client = _legacy(server)
        client.connect()
        start = time.monotonic()
        pending = client.request_async("tools/call", {"name": "x"})
        assert time.monotonic() - start < 0.5  # the POST runs on its own thread
        assert legacy.got.wait(10)
        assert _post_threads(), "the held POST should be on an mcpsync-send thread"
        error, after = _released_by_close(client, lambda: pending.result(timeout=30), legacy.got)
        assert after < SLACK
        assert isinstance(error, mcpsync.ClientClosed), repr(error)
        assert not _post_threads(), "close() left the POST's thread running"


# -- A9: a WebSocket write to a peer that stopped reading ------------------------------------------


def test_a9_websocket_write_to_a_peer_that_stopped_reading_ends_at_the_deadline() -> None:
    from ws_raw import RawServer

    from mcpsync.transports.websocket.transport import WebSocketTransport

    def script(conn: socket.socket, stop: threading.Event) -> None:
        stop.wait(30.0)  # never reads: the socket buffers fill up

    server = RawServer(script)
    transport = WebSocketTransport(server.url, write_timeout=60.0)  # the deadline must come first
    try:
        transport.start(lambda message: None, lambda exc: None)
        big = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "z" * 1_000_000}}
        for _ in range(200):
            start = time.monotonic()
            try:
                transport.send(big, Deadline(1.0))
            except (mcpsync.RequestTimeout, mcpsync.ConnectionClosed):
                break
        else:
            pytest.fail("200 MB went to a peer that reads nothing")
        assert time.monotonic() - start < 1.0 + SLACK
    finally:
        transport.close()
        server.stop()
