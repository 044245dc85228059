"""Fault tests for the HTTP transports against raw-socket servers (RELIABILITY C1-C9, D1, D3, F1)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request, handshake

import mcpsync
from mcpsync.exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    McpError,
    ServerStartError,
    SessionExpired,
)

SECRET = "s3cr3t-token-value"

pytestmark = pytest.mark.timeout(60)


def client(url: str, **kw: Any) -> mcpsync.Client:
    kw.setdefault("timeout", 5)
    kw.setdefault("read_timeout", 5)
    kw.setdefault("transport", "streamable-http")
    return mcpsync.Client.http(url, headers={"Authorization": f"Bearer {SECRET}", "X-Api-Key": SECRET}, **kw)


def reply(request: Request, result: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.body["id"], "result": result if result is not None else {}}


# -- C1: every error status fails that request at once, typed, with no secret ---------------------

BODIES = {
    "json": ('{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}', "application/json"),
    "html": (f"<html><body><h1>502 Bad Gateway</h1><p>token={SECRET}</p></body></html>", "text/html"),
    "empty": ("", "text/plain"),
}


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 413, 429, 500, 502, 503, 504])
@pytest.mark.parametrize("body", sorted(BODIES))
def test_error_status_fails_the_request_at_once(status: int, body: str) -> None:
    text, ctype = BODIES[body]

    def handler(request: Request, conn: Conn) -> None:
        if not handshake(request, conn, session=None):
            conn.respond(status, text, ctype=ctype, headers={"Retry-After": "7"})

    with FaultServer(handler) as server, client(server.url + "/mcp", listen=False) as c:
        start = time.monotonic()
        with pytest.raises(HTTPStatusError) as info:
            c.list_tools()
        assert time.monotonic() - start < 1.0
        assert info.value.status == status
        assert info.value.retry_after == 7.0
        assert SECRET not in str(info.value) and SECRET not in repr(info.value.args)
        if body == "html":
            assert "Bad Gateway" in info.value.body_excerpt and "<" not in info.value.body_excerpt


def test_connection_dropped_without_reply_is_connection_closed() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if not handshake(request, conn, session=None):
            conn.sock.close()

    with FaultServer(handler) as server, client(server.url, listen=False) as c:
        start = time.monotonic()
        with pytest.raises(ConnectionClosed) as info:
            c.ping()
        assert time.monotonic() - start < 2.0
        assert info.value.outcome_unknown


def test_connection_refused_at_initialize() -> None:
    with FaultServer(lambda r, c: None) as server:
        url = server.url
    with pytest.raises(ConnectionClosed):
        client(url).connect()


# -- C3/C4: a reply stream that ends early is resumed with Last-Event-ID, within a budget ----------


def test_post_stream_closed_after_priming_is_resumed_after_retry() -> None:
    pending: dict[str, Request] = {}

    def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET":
            if "last-event-id" not in request.headers:
                conn.respond(405, b"", ctype="text/plain")
                return
            conn.start_sse()
            conn.message(reply(pending["call"], {"content": [], "isError": False}), "e2")
            conn.hold()
        elif request.rpc_method == "tools/call":
            pending["call"] = request
            conn.start_sse()
            conn.event("id: e1\nretry: 300\ndata:\n\n")
            conn.end()
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url) as c:
        result = c.call_tool("x", {})
        assert result.is_error is False
        gets = [r for r in server.requests if r.method == "GET" and "last-event-id" in r.headers]
        assert gets[0].headers["last-event-id"] == "e1"
        assert gets[0].headers["mcp-session-id"] == "s1"
        closed_at = pending["call"].time
        assert gets[0].time - closed_at >= 0.3


def test_post_stream_closed_without_event_id_fails_promptly() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "ping":
            conn.start_sse()
            conn.event(": keep-alive\n\n")
            conn.end()
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url, timeout=20) as c:
        start = time.monotonic()
        with pytest.raises(McpError) as info:
            c.ping()
        assert time.monotonic() - start < 2.0
        assert "outcome" in str(info.value.args) or "before the reply" in str(info.value)
        assert not [r for r in server.requests if r.method == "GET" and "last-event-id" in r.headers]


# -- C5: session expiry: one re-initialize shared by all threads -------------------------------------


class ExpiringServer:
    def __init__(self, *, always_404: bool = False) -> None:
        self.session = "s1"
        self.expired = threading.Event()
        self.always_404 = always_404
        self.lock = threading.Lock()
        self.count = 0

    def __call__(self, request: Request, conn: Conn) -> None:
        if request.rpc_method == "server/discover":
            handshake(request, conn)  # 400, as a handshake-era server answers
            return
        if request.rpc_method == "initialize":
            with self.lock:
                self.count += 1
                self.session = f"s{self.count}"
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "expiring", "version": "0"}}}, headers={"Mcp-Session-Id": self.session})
            return
        if request.method == "GET":
            conn.respond(405, b"", ctype="text/plain")
            return
        if request.method == "DELETE":
            conn.respond(200, b"", ctype="text/plain")
            return
        if self.always_404 and self.count > 1 or (
                self.expired.is_set() and request.headers.get("mcp-session-id") == "s1"):
            conn.respond(404, '{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}')
            return
        if "id" not in request.body:
            conn.respond(202, b"", ctype="text/plain")
        elif request.rpc_method == "tools/list":
            conn.respond(200, reply(request, {"tools": []}))
        else:
            conn.respond(200, reply(request, {"content": [], "isError": False}))


def test_sixteen_threads_hitting_an_expired_session_share_one_reinitialize() -> None:
    fake = ExpiringServer()
    with FaultServer(fake) as server, client(server.url) as c:
        c.list_tools()
        fake.expired.set()
        barrier = threading.Barrier(16)
        errors: list[BaseException] = []

        def work() -> None:
            barrier.wait()
            try:
                c.list_tools()
            except BaseException as exc:  # collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert errors == []
        assert len(server.rpc("initialize")) == 2
        replay = server.rpc("initialize")[1]
        assert "mcp-session-id" not in replay.headers
        # The client re-initialized through its session: an id no other request used.
        ids = [r.body.get("id") for r in server.requests if isinstance(r.body, dict)]
        assert ids.count(replay.body["id"]) == 1
        assert len(server.rpc("notifications/initialized")) == 2


def test_tool_call_after_expiry_raises_session_expired_and_next_call_works() -> None:
    fake = ExpiringServer()
    with FaultServer(fake) as server, client(server.url) as c:
        c.list_tools()
        fake.expired.set()
        with pytest.raises(SessionExpired):
            c.call_tool("x", {})
        assert len(server.rpc("tools/call")) == 1
        assert c.call_tool("x", {}).is_error is False


def test_expiry_right_after_reinitialize_raises_without_looping() -> None:
    fake = ExpiringServer(always_404=True)
    with FaultServer(fake) as server, client(server.url) as c:
        c.list_tools()
        fake.expired.set()
        with pytest.raises(SessionExpired):
            c.list_tools()
        assert len(server.rpc("initialize")) == 2


# -- C8/C9: latency, streams that never end, close() from another thread ---------------------------


@pytest.mark.parametrize("chunked", [True, False])
def test_small_event_then_silence_is_delivered_at_once(chunked: bool) -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "ping":
            conn.start_sse(chunked=chunked)
            conn.message(reply(request))
            conn.hold()  # the stream stays open and silent
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url, listen=False) as c:
        start = time.monotonic()
        c.ping()
        assert time.monotonic() - start < 0.5


def test_stream_that_never_ends_times_out_and_close_unblocks_the_reader() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "ping":
            conn.start_sse()
            for _ in range(100):  # a trickle: one keep-alive byte pattern, never a reply
                if conn.server.stopping.wait(0.2):
                    return
                conn.event(":\n")
        else:
            handshake(request, conn)

    with FaultServer(handler) as server:
        c = client(server.url, read_timeout=1.0, listen=False)
        start = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            c.request("ping", timeout=1.5)
        assert time.monotonic() - start < 3.0
        start = time.monotonic()
        c.close()
        assert time.monotonic() - start < 2.0


def test_a_fast_trickle_does_not_keep_a_call_past_its_deadline() -> None:
    """Keep-alives faster than any socket timeout: the deadline itself ends the read."""
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "ping":
            conn.start_sse()
            until = time.monotonic() + 8.0
            while time.monotonic() < until and not conn.server.stopping.is_set():
                conn.event(":\n")  # a byte pattern every ~0.2 ms, never a reply
                time.sleep(0.0002)
        else:
            handshake(request, conn)

    with FaultServer(handler) as server:
        c = client(server.url, listen=False)
        try:
            start = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                c.request("ping", timeout=1.0)
            assert time.monotonic() - start < 4.0
        finally:
            c.close()


# -- F1: redirects ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_cross_origin_redirect_is_refused_and_sends_nothing_there(status: int) -> None:
    with FaultServer(lambda r, c: handshake(r, c), host="127.0.0.2") as other:
        def handler(request: Request, conn: Conn) -> None:
            conn.respond(status, b"", ctype="text/plain", headers={"Location": other.url + "/mcp"})

        with FaultServer(handler) as server:
            with pytest.raises(HTTPStatusError) as info:
                client(server.url + "/mcp").connect()
            assert info.value.status == status
            assert "another origin" in str(info.value)
        assert other.requests == []


def test_same_origin_307_is_followed_with_headers() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.path == "/old":
            conn.respond(307, b"", ctype="text/plain", headers={"Location": "/mcp"})
        elif not handshake(request, conn):
            conn.respond(200, reply(request))

    with FaultServer(handler) as server, client(server.url + "/old", listen=False) as c:
        c.ping()
        assert server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"


# -- legacy SSE and auto fallback ------------------------------------------------------------------


def legacy_handler(endpoint: str, *, drop_after_post: bool = False) -> Any:
    streams: list[Conn] = []
    ready = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET":
            conn.start_sse()
            conn.event(f"event: endpoint\ndata: {endpoint}\n\n")
            streams.append(conn)
            ready.set()
            conn.hold()
        elif request.method == "POST" and request.path.startswith("/messages") \
                and request.rpc_method != "server/discover":
            conn.respond(202, b"", ctype="text/plain")
            ready.wait(5)
            if drop_after_post and request.rpc_method == "ping":
                streams[0].sock.shutdown(2)
            elif "id" in request.body:
                result = {"protocolVersion": "2024-11-05", "capabilities": {},
                          "serverInfo": {"name": "legacy", "version": "0"}} \
                    if request.rpc_method == "initialize" else {}
                streams[0].message({"jsonrpc": "2.0", "id": request.body["id"], "result": result})
        else:
            conn.respond(405, b"", ctype="text/plain")

    return handler


def test_auto_falls_back_to_legacy_sse_on_405() -> None:
    with FaultServer(legacy_handler("/messages?session_id=abc")) as server:
        with client(server.url + "/sse", transport="auto") as c:
            assert c.protocol_version == "2024-11-05"
            c.ping()
            assert type(c._conn.transport.active).__name__ == "LegacySSETransport"  # type: ignore[union-attr]
        # One probe round trip: the server/discover POST got 405 without a JSON-RPC body, so
        # the initialize POST is skipped and the legacy stream is opened at once.
        assert [r.method for r in server.requests][:2] == ["POST", "GET"]
        assert server.requests[0].rpc_method == "server/discover"
        assert server.rpc("initialize")[0].path.startswith("/messages")


def test_legacy_endpoint_on_another_origin_is_refused() -> None:
    with FaultServer(legacy_handler("http://127.0.0.2:9/messages")) as server:
        with pytest.raises(ServerStartError, match="another origin"):
            client(server.url + "/sse", transport="sse").connect()
        assert all(r.method == "GET" for r in server.requests)


def test_legacy_stream_loss_fails_pending_requests_promptly() -> None:
    with FaultServer(legacy_handler("/messages", drop_after_post=True)) as server:
        with client(server.url + "/sse", transport="sse", timeout=20) as c:
            start = time.monotonic()
            with pytest.raises(ConnectionClosed):
                c.ping()
            assert time.monotonic() - start < 2.0
