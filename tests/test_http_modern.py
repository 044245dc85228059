"""Streamable HTTP in the stateless era (2026-07-28) and the era probe over HTTP.

Real servers: the official SDK (``mcp`` 2.3.0) serving 2026-07-28, the same SDK made to behave
like a handshake-era release (``--legacy-only``), and server-everything.  Raw-socket fault
servers (``tests/servers/http_fault.py``) cover what a real server will not do on demand:
recognised modern errors in 400 bodies, lost response streams, header mismatches, the
non-standard SSE "result fragment" dialect.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from http_fault import Conn, FaultServer, Request, discover_result
from test_http_sdk import SERVERS, _start, _stop

import mcpsync
from mcpsync.exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    ProtocolError,
    RequestTimeout,
    ServerError,
    UnsupportedProtocolVersion,
)

pytestmark = pytest.mark.timeout(60)


class Recorded(requests.Session):
    """A ``requests.Session`` that remembers the JSON-RPC method of every POST it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str | None, dict[str, str]]] = []
        self.hooks["response"].append(self._record)

    def _record(self, response: requests.Response, **_: Any) -> None:
        body = response.request.body
        try:
            method = json.loads(body).get("method") if body else None
        except ValueError:
            method = None
        self.sent.append((response.request.method or "", method, dict(response.request.headers)))

    def methods(self) -> list[str | None]:
        return [m for verb, m, _ in self.sent if verb == "POST"]


@pytest.fixture
def sdk_modern() -> Iterator[str]:
    proc, port = _start([sys.executable, str(SERVERS / "http_sdk.py"), "--transport", "streamable",
                         "--header-tool"])
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(proc)


# -- auto mode against real servers: one probe round trip on legacy servers --------------------


@pytest.mark.parametrize("flags", [[], ["--stateless"], ["--json"]], ids=["stateful", "stateless", "json"])
def test_auto_against_a_legacy_sdk_server_costs_one_probe(flags: list[str]) -> None:
    proc, port = _start([sys.executable, str(SERVERS / "http_sdk.py"), "--transport", "streamable",
                         "--legacy-only", *flags])
    session = Recorded()
    try:
        with mcpsync.Client.http(f"http://127.0.0.1:{port}/mcp", session=session, timeout=20) as c:
            assert c.protocol_version != "2026-07-28"
            assert c.call_tool("echo", {"text": "old"}).text == "old"
        methods = session.methods()
        assert methods[:2] == ["server/discover", "initialize"]
        assert methods.count("server/discover") == 1
    finally:
        session.close()
        _stop(proc)


@pytest.mark.node
def test_auto_against_server_everything_costs_one_probe(everything_server: list[str]) -> None:
    import os

    from test_http_sdk import _LOOPBACK

    node, script = everything_server[0], everything_server[1]
    argv = [node, "--import", "data:text/javascript," + _LOOPBACK, script, "streamableHttp"]
    proc, port = _start(argv, {**os.environ, "PORT": "0"})
    session = Recorded()
    try:
        with mcpsync.Client.http(f"http://127.0.0.1:{port}/mcp", session=session, timeout=20) as c:
            assert c.protocol_version != "2026-07-28"
            assert "hi" in c.call_tool("echo", {"message": "hi"}).text
        assert session.methods()[:2] == ["server/discover", "initialize"]
        assert session.methods().count("server/discover") == 1
    finally:
        session.close()
        _stop(proc)


def test_auto_against_the_modern_sdk_server(sdk_modern: str) -> None:
    session = Recorded()
    with mcpsync.Client.http(sdk_modern, session=session, timeout=20) as c:
        assert c.protocol_version == "2026-07-28"
        assert c.call_tool("echo", {"text": "new"}).text == "new"
    session.close()
    assert "initialize" not in session.methods()
    assert all("mcp-session-id" not in {k.lower() for k in h} for _, _, h in session.sent)
    assert {verb for verb, _, _ in session.sent} == {"POST"}  # no GET stream, no DELETE


# -- x-mcp-header and HeaderMismatch against the SDK -------------------------------------------


def test_param_headers_with_the_sdk_including_a_stale_schema(sdk_modern: str) -> None:
    session = Recorded()
    with mcpsync.Client.http(sdk_modern, session=session, timeout=20) as c:
        # No tools/list yet: the first call lacks Mcp-Param-Region, the SDK answers -32020,
        # the transport re-lists the tools and resends once.
        assert c.call_tool("regional", {"region": "eu-west", "query": "q"}).text == "dynamic tool regional"
        calls = [h for _, m, h in session.sent if m == "tools/call"]
        assert len(calls) == 2 and "Mcp-Param-Region" not in calls[0]
        assert calls[1]["Mcp-Param-Region"] == "eu-west"
        assert "tools/list" in session.methods()
        before = len(session.sent)
        assert c.call_tool("regional", {"region": "日本"}).text == "dynamic tool regional"
        (header,) = [h for _, m, h in session.sent[before:] if m == "tools/call"]
        assert header["Mcp-Param-Region"] == "=?base64?" + base64.b64encode("日本".encode()).decode() + "?="
    session.close()


# -- subscriptions/listen over HTTP ---------------------------------------------------------------


def test_listen_and_on_over_http_with_the_sdk(sdk_modern: str, recorder: Any) -> None:
    session = Recorded()
    changed = recorder()
    with mcpsync.Client.http(sdk_modern, session=session, timeout=20) as c:
        assert c.protocol_version == "2026-07-28"
        c.on("notifications/tools/list_changed", changed)
        with c.listen(tools=True) as sub:
            c.call_tool("add_tool", {"name": "fresh"})
            notification = next(iter(sub))
            assert notification.method == "notifications/tools/list_changed"
        changed.wait(1)
        assert "fresh" in [t.name for t in c.list_tools()]
    session.close()
    # Closing a stream is the cancellation in 2026-07-28: nothing is POSTed for it.
    assert "notifications/cancelled" not in session.methods()


# -- recognised modern errors in HTTP error bodies -----------------------------------------------


def modern_server(extra: Callable[[Request, Conn], bool] | None = None, *,
                  tools: list[dict[str, Any]] | None = None) -> Callable[[Request, Conn], None]:
    def handler(request: Request, conn: Conn) -> None:
        if extra is not None and extra(request, conn):
            return
        method = request.rpc_method
        if method == "server/discover":
            conn.respond(200, discover_result(request))
        elif method == "tools/list":
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {"tools": tools or []}})
        elif request.body is not None and "id" not in request.body:
            conn.respond(202, b"", ctype="text/plain")
        elif request.body is not None:
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"],
                               "result": {"content": [{"type": "text", "text": "ok"}]}})
        else:
            conn.respond(405, b"", ctype="text/plain")

    return handler


def test_unsupported_version_in_a_400_body_is_a_modern_answer_not_a_fallback() -> None:
    def unsupported(request: Request, conn: Conn) -> bool:
        if request.rpc_method != "server/discover":
            return False
        conn.respond(400, {"jsonrpc": "2.0", "id": request.body["id"], "error": {
            "code": -32022, "message": "Unsupported protocol version",
            "data": {"requested": "2026-07-28", "supported": ["2099-01-01"]}}})
        return True

    with FaultServer(modern_server(unsupported)) as server:
        with pytest.raises(UnsupportedProtocolVersion):
            mcpsync.Client.http(server.url, timeout=5).connect()
        assert server.rpc("initialize") == []  # the -32022 said "modern": no handshake attempt


def test_method_not_found_404_with_a_body_is_a_server_error() -> None:
    def missing(request: Request, conn: Conn) -> bool:
        if request.rpc_method != "prompts/list":
            return False
        conn.respond(404, {"jsonrpc": "2.0", "id": request.body["id"],
                           "error": {"code": -32601, "message": "Method not found"}})
        return True

    with FaultServer(modern_server(missing)) as server, mcpsync.Client.http(server.url, timeout=5) as c:
        with pytest.raises(ServerError) as info:
            c.request("prompts/list")
        assert info.value.code == -32601


def test_plain_400_without_a_modern_body_is_an_http_error() -> None:
    def broken(request: Request, conn: Conn) -> bool:
        if request.rpc_method != "tools/call":
            return False
        conn.respond(400, "<html>bad gateway</html>", ctype="text/html")
        return True

    with FaultServer(modern_server(broken)) as server, mcpsync.Client.http(server.url, timeout=5) as c:
        with pytest.raises(HTTPStatusError) as info:
            c.call_tool("x", {})
        assert info.value.status == 400


# -- lost streams, cancellation -------------------------------------------------------------------


def test_lost_modern_stream_fails_the_request_outcome_unknown_without_resuming() -> None:
    def drop(request: Request, conn: Conn) -> bool:
        if request.rpc_method != "tools/call":
            return False
        conn.start_sse()
        conn.event("id: e1\nretry: 10\ndata:\n\n")  # an id: would be resumable in the old era
        conn.end()
        return True

    with FaultServer(modern_server(drop)) as server, mcpsync.Client.http(server.url, timeout=20) as c:
        assert c.protocol_version == "2026-07-28"
        start = time.monotonic()
        with pytest.raises(ConnectionClosed) as info:  # via on_request_error, not a -32000 reply
            c.call_tool("x", {})
        assert time.monotonic() - start < 5
        assert info.value.outcome_unknown
        assert "cannot be resumed" in str(info.value)
        assert [r for r in server.requests if r.method == "GET"] == []


def test_cancelling_a_modern_request_closes_its_stream_and_posts_nothing() -> None:
    closed = threading.Event()

    def hold(request: Request, conn: Conn) -> bool:
        if request.rpc_method != "tools/call" or request.body["params"]["name"] != "slow":
            return False
        conn.start_sse()
        conn.event(": working\n\n")
        conn.sock.settimeout(20)
        try:
            if conn.sock.recv(1) == b"":  # the client closed its end: the cancellation
                closed.set()
        except OSError:
            closed.set()
        return True

    with FaultServer(modern_server(hold)) as server, mcpsync.Client.http(server.url, timeout=20) as c:
        with pytest.raises(RequestTimeout):
            c.call_tool("slow", {}, timeout=0.5)
        assert closed.wait(10)
        assert server.rpc("notifications/cancelled") == []
        assert c.call_tool("x", {}).text == "ok"  # the client is still fine


# -- Mcp-Param-* headers and HeaderMismatch (raw server) ------------------------------------------

TOOLS = [
    {"name": "good", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        "opts": {"type": "object", "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}}},
        "note": {"type": "string"}}}},
    {"name": "in_array", "inputSchema": {"type": "object", "properties": {
        "xs": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}}}},
    {"name": "float", "inputSchema": {"type": "object", "properties": {
        "f": {"type": "number", "x-mcp-header": "F"}}}},
    {"name": "dupe", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": "Same"}, "b": {"type": "string", "x-mcp-header": "same"}}}},
    {"name": "bad_token", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": "has space"}}}},
]


def test_param_headers_are_encoded_and_invalid_tools_are_excluded() -> None:
    with FaultServer(modern_server(tools=TOOLS)) as server, mcpsync.Client.http(server.url, timeout=5) as c:
        assert [t.name for t in c.list_tools()] == ["good"]
        c.call_tool("good", {"region": " padded ", "count": -7, "dry": False, "opts": {"tenant": "acme"},
                             "note": "not mirrored"})
        headers = server.rpc("tools/call")[-1].headers
        assert headers["mcp-param-region"] == "=?base64?IHBhZGRlZCA=?="
        assert headers["mcp-param-count"] == "-7"
        assert headers["mcp-param-dry"] == "false"
        assert headers["mcp-param-tenant"] == "acme"
        assert headers["mcp-name"] == "good" and headers["mcp-method"] == "tools/call"
        assert not any(k.startswith("mcp-param-note") for k in headers)
        c.call_tool("good", {"region": None})  # null: the header is omitted
        assert not any(k.startswith("mcp-param-") for k in server.rpc("tools/call")[-1].headers)


def test_header_mismatch_twice_is_delivered_without_looping() -> None:
    def mismatch(request: Request, conn: Conn) -> bool:
        if request.rpc_method != "tools/call":
            return False
        conn.respond(400, {"jsonrpc": "2.0", "id": request.body["id"],
                           "error": {"code": -32020, "message": "Header mismatch"}})
        return True

    with FaultServer(modern_server(mismatch, tools=TOOLS)) as server, \
            mcpsync.Client.http(server.url, timeout=5) as c:
        with pytest.raises(ServerError) as info:
            c.call_tool("good", {"region": "r"})
        assert info.value.code == -32020
        assert len(server.rpc("tools/call")) == 2  # the original and one resend
        assert len(server.rpc("tools/list")) == 1  # the re-listing in between


# -- the SSE "result fragment" dialect is rejected (docs/websocket.rst) --------------------------


@pytest.mark.parametrize("ending", ["complete", "error", "eof"])
@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_result_fragment_dialect_fails_at_once_with_protocol_error(ending: str, era: str) -> None:
    from http_fault import handshake

    def fragments(request: Request, conn: Conn) -> bool:
        if request.rpc_method != "tools/call":
            return False
        conn.start_sse()
        conn.event(": heartbeat\n\n")
        conn.event('id: f1\nevent: result\ndata: {"content": [{"type": "text", "text": "par\n\n')
        conn.event('id: f2\nevent: result\ndata: tial"}]}\n\n')
        if ending == "eof":
            conn.end()
            return True
        conn.event(f"event: {ending}\n\n")
        conn.hold()  # the stream stays open: the error must not wait for its end
        return True

    def legacy(request: Request, conn: Conn) -> None:
        if not fragments(request, conn) and not handshake(request, conn):
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {}})

    handler = modern_server(fragments) if era == "modern" else legacy
    with FaultServer(handler) as server, mcpsync.Client.http(server.url, timeout=20, listen=False) as c:
        start = time.monotonic()
        with pytest.raises(ProtocolError, match="non-standard SSE"):
            c.call_tool("x", {})
        assert time.monotonic() - start < 5
        assert not [r for r in server.requests if "last-event-id" in r.headers]


def test_heartbeat_comments_stay_comments() -> None:
    def beats(request: Request, conn: Conn) -> bool:
        if request.rpc_method != "tools/call":
            return False
        conn.start_sse()
        conn.event(": heartbeat\n\n")
        conn.message({"jsonrpc": "2.0", "id": request.body["id"],
                      "result": {"content": [{"type": "text", "text": "whole"}]}})
        conn.event(": heartbeat\n\n")
        conn.end()
        return True

    with FaultServer(modern_server(beats)) as server, mcpsync.Client.http(server.url, timeout=5) as c:
        assert c.call_tool("x", {}).text == "whole"


# -- WebSocket URLs through Client.http -----------------------------------------------------------


def test_http_constructor_routes_websocket_urls() -> None:
    from ws_harness import Bridge

    bridge = Bridge()
    try:
        with mcpsync.Client.http(bridge.url(), timeout=20, mode="legacy") as c:
            assert type(c._conn.transport).__name__ == "WebSocketTransport"  # type: ignore[union-attr]
            assert c.call_tool("echo", {"text": "ws"}).text == "ws"
        with mcpsync.Client.http(bridge.url(), transport="websocket", timeout=20, mode="legacy") as c:
            c.ping()
    finally:
        bridge.stop()
    with requests.Session() as session, pytest.raises(ValueError, match="requests.Session"):
        mcpsync.Client.http("ws://127.0.0.1:9/mcp", session=session)
    with pytest.raises(ValueError, match="websocket"):
        mcpsync.Client.http("http://127.0.0.1:9/mcp", transport="carrier-pigeon")

