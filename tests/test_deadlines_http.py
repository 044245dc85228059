"""Deadlines over HTTP (issue 12): every call returns or raises by its deadline.

Real peers: the official SDK server (``servers/http_sdk.py``) in JSON- and SSE-reply modes, in
both eras; raw-socket servers (``servers/http_fault.py``) for what no real server does on
purpose: a POST held before its headers, resumption GETs that fail, chunked SSE with pauses
between chunks (the TypeScript SDK v2 server's byte pattern), 401s.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request, discover_result, handshake
from test_http_sdk import _start, _stop

import mcpsync
from mcpsync.exceptions import AuthError, ConnectionClosed, HTTPStatusError

SERVERS = Path(__file__).resolve().parent / "servers"
SECRET = "s3cr3t-token-value"

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(params=["json", "sse"])
def sdk_url(request: pytest.FixtureRequest) -> Iterator[str]:
    argv = [sys.executable, str(SERVERS / "http_sdk.py"), "--transport", "streamable"]
    if request.param == "json":
        argv.append("--json")
    proc, port = _start(argv)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(proc)


def reply(request: Request, result: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.body["id"], "result": result if result is not None else {}}


# -- A9: the reply, whatever its content type, is bounded by the call's deadline -------------------


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_a9_slow_tool_times_out_at_the_deadline_on_the_sdk_server(sdk_url: str, mode: str) -> None:
    with mcpsync.Client.http(sdk_url, mode=mode, timeout=20) as client:
        client.connect()
        start = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            client.call_tool("slow", {"steps": 1, "delay": 5}, timeout=0.5, reset_timeout_on_progress=False)
        assert time.monotonic() - start < 1.5  # not the 5 s the tool takes
        # The connection stays usable.
        assert client.call_tool("echo", {"text": "still here"}).text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_a9_request_async_returns_at_once_and_cancel_releases_the_waiter(sdk_url: str, mode: str) -> None:
    with mcpsync.Client.http(sdk_url, mode=mode, timeout=20) as client:
        client.connect()
        start = time.monotonic()
        pending = client.request_async("tools/call", {"name": "slow", "arguments": {"steps": 1, "delay": 5}})
        assert time.monotonic() - start < 0.5
        outcome: list[BaseException] = []
        waiter = threading.Thread(target=lambda: outcome.append(
            pytest.raises(mcpsync.McpError, pending.result, timeout=20).value))
        waiter.start()
        start = time.monotonic()
        assert pending.cancel("enough")
        waiter.join(5)
        assert time.monotonic() - start < 1.0
        assert isinstance(outcome[0], mcpsync.RequestCancelled)


class HeldPost:
    """A raw server whose tools/call POST gets no headers until the server stops."""

    def __init__(self, modern: bool = False) -> None:
        self.arrived = threading.Event()
        self.modern = modern

    def __call__(self, request: Request, conn: Conn) -> None:
        if self.modern and request.rpc_method == "server/discover":
            conn.respond(200, discover_result(request))
        elif request.rpc_method == "tools/call":
            self.arrived.set()
            conn.hold()
        else:
            handshake(request, conn)


@pytest.mark.parametrize("modern", [False, True])
def test_a9_close_releases_a_caller_waiting_for_headers(modern: bool) -> None:
    held = HeldPost(modern)
    with FaultServer(held) as server:
        client = mcpsync.Client.http(server.url, transport="streamable-http", timeout=30,
                                     mode="2026-07-28" if modern else "legacy")
        client.connect()
        outcome: list[BaseException] = []
        caller = threading.Thread(target=lambda: outcome.append(
            pytest.raises(mcpsync.McpError, client.request, "tools/call", {"name": "x"}).value))
        caller.start()
        assert held.arrived.wait(10)
        start = time.monotonic()
        client.close()
        caller.join(5)
        assert time.monotonic() - start < 1.5
        assert isinstance(outcome[0], mcpsync.ClientClosed)


def test_a9_a_caller_session_posts_on_a_worker_and_is_released_by_close() -> None:
    import requests

    held = HeldPost()
    with FaultServer(held) as server, requests.Session() as session:
        client = mcpsync.Client.http(server.url, transport="streamable-http", timeout=30,
                                     mode="legacy", session=session)
        client.connect()
        outcome: list[BaseException] = []
        released: list[float] = []

        def call() -> None:
            outcome.append(pytest.raises(mcpsync.McpError, client.request, "tools/call", {"name": "x"}).value)
            released.append(time.monotonic())

        caller = threading.Thread(target=call)
        caller.start()
        assert held.arrived.wait(10)
        start = time.monotonic()
        client.close()  # bounded; the worker still blocked in the POST is not joined forever
        caller.join(5)
        assert released[0] - start < 1.0
        assert isinstance(outcome[0], mcpsync.ClientClosed)
        server.stop()  # ends the held POST: the worker thread then ends too


# -- C4: a lost reply stream that cannot be resumed fails at once -----------------------------------


def test_c4_reply_stream_whose_resumption_cannot_connect_fails_at_once() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET" and "last-event-id" in request.headers:
            conn.sock.close()  # every resumption fails at the connection level
        elif request.rpc_method == "ping":
            conn.start_sse()
            conn.event("id: p1\nretry: 50\ndata:\n\n")
            conn.end()
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, mcpsync.Client.http(
            server.url, transport="streamable-http", mode="legacy", timeout=20, listen=False) as client:
        client.connect()
        start = time.monotonic()
        with pytest.raises(ConnectionClosed) as info:
            client.ping()
        assert info.value.outcome_unknown
        assert time.monotonic() - start < 3.0  # not the 20 s timeout


# -- C8 and the caller's inline read: events as soon as their blank line is read --------------------


def chunked_sse_with_pauses(conn: Conn, text: str, pieces: int, never: threading.Event, pause: float) -> None:
    """Send *text* as *pieces* HTTP chunks *pause* seconds apart, the blank line in a chunk of its own."""
    body = text.rstrip("\n") + "\n"
    step = max(1, len(body) // pieces)
    for i in range(0, len(body), step):
        conn.event(body[i:i + step])
        if pause:
            never.wait(pause)
    conn.event("\n")


@pytest.mark.parametrize("pause", [0.0, 0.05])
def test_c8_event_in_chunks_then_an_idle_connection_is_delivered_at_once(pause: float) -> None:
    never = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "ping":
            conn.start_sse()
            chunked_sse_with_pauses(conn, f'data: {{"jsonrpc":"2.0","id":{request.body["id"]},"result":{{}}}}\n',
                                    4, never, pause)
            conn.hold()  # open and idle: no more bytes, no end
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, mcpsync.Client.http(
            server.url, transport="streamable-http", mode="legacy", timeout=10, listen=False) as client:
        client.connect()
        for _ in range(3):  # the first call may spend the inline-read budget warming up
            start = time.monotonic()
            client.ping()
            assert time.monotonic() - start < 1.5


def modern_listen_server(request: Request, conn: Conn) -> None:
    """The TypeScript SDK v2 pattern: a listen stream whose acknowledgement comes in one chunk,
    then nothing until the next keep-alive (15 s there; here, never)."""
    if request.rpc_method == "server/discover":
        conn.respond(200, discover_result(request))
    elif request.rpc_method == "subscriptions/listen":
        conn.start_sse()
        ack = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
               "params": {"notifications": request.body["params"]["notifications"],
                          "_meta": {"io.modelcontextprotocol/subscriptionId": request.body["id"]}}}
        conn.message(ack)
        conn.hold()
    elif request.rpc_method == "tools/call":
        conn.start_sse()
        conn.message({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
            "progressToken": request.body["id"], "progress": 1, "total": 10}})
        conn.hold()
    else:
        conn.respond(405, b"", ctype="text/plain")


def test_c8_listen_returns_once_its_acknowledgement_chunk_is_read() -> None:
    with FaultServer(modern_listen_server) as server, mcpsync.Client.http(
            server.url, transport="streamable-http", mode="2026-07-28", timeout=10) as client:
        client.connect()
        # Each on() (re)opens the listen stream with a new filter. The first may spend the
        # caller's short inline-read budget warming up; the later ones must not overrun it.
        for method in ("notifications/tools/list_changed", "notifications/prompts/list_changed",
                       "notifications/resources/list_changed"):
            start = time.monotonic()
            client.on(method, lambda params: None)
            assert time.monotonic() - start < 1.5  # not the next keep-alive


def test_c9_call_whose_stream_goes_quiet_after_a_chunk_times_out_at_its_deadline() -> None:
    with FaultServer(modern_listen_server) as server, mcpsync.Client.http(
            server.url, transport="streamable-http", mode="2026-07-28", timeout=10) as client:
        client.connect()
        for _ in range(3):  # the first call may spend the inline-read budget warming up
            start = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                client.request("tools/call", {"name": "x"}, timeout=1.0, progress=lambda *a: None,
                               reset_timeout_on_progress=False)
            assert time.monotonic() - start < 2.0


# -- F: a 401/403 that no auth handler resolves is an AuthError and an HTTPStatusError -------------


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize("challenge", [True, False])
def test_f7_unresolved_401_or_403_is_an_auth_error_with_status_and_masked_body(status: int, challenge: bool) -> None:
    def handler(request: Request, conn: Conn) -> None:
        headers = {"WWW-Authenticate": 'Bearer realm="x"'} if challenge else {}
        conn.respond(status, f'{{"error":"denied","token":"{SECRET}"}}', headers=headers)

    from mcpsync.exceptions import HTTPAuthError  # new in issue 12

    with FaultServer(handler) as server:
        client = mcpsync.Client.http(server.url, transport="streamable-http", mode="legacy",
                                     headers={"Authorization": f"Bearer {SECRET}"})
        with pytest.raises(AuthError) as info:
            client.connect()
        client.close()
    assert isinstance(info.value, HTTPStatusError) and isinstance(info.value, HTTPAuthError)
    assert info.value.status == status
    assert "denied" in info.value.body_excerpt
    assert SECRET not in str(info.value) and SECRET not in info.value.body_excerpt


def test_a_redirect_hop_gets_only_what_is_left_of_the_deadline() -> None:
    # The first hop answers 307 after 1.2 s; the second never answers.  Each hop used to get
    # the first hop's share of the deadline again (2.0 s read timeout): the call ended at ~3.2 s.
    def handler(request: Request, conn: Conn) -> None:
        if handshake(request, conn):
            return
        if request.path == "/mcp":
            time.sleep(1.2)
            conn.respond(307, b"", ctype="text/plain", headers={"Location": "/held"})
        else:
            conn.hold(10)

    with FaultServer(handler) as server, mcpsync.Client.http(
            server.url + "/mcp", transport="streamable-http", mode="2025-11-25", listen=False) as client:
        client.connect()
        start = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            client.ping(timeout=2.0)
        assert time.monotonic() - start < 2.8
