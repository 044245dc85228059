"""RELIABILITY C6, C10, C11, C12 over HTTP: raw-socket fakes, a cutting proxy, the official SDK server.

C6: every success-path status/content-type for notifications, requests and the GET stream.
C10: ``MCP-Protocol-Version`` after negotiation; no era fallback on network errors or 401.
C11: an intermediary cuts a long tool call; resume (2025-11-25 with an event id) or fail with
``outcome_unknown`` (no id, or 2026-07-28), never re-POSTing the call (the server's ledger).
C12: many threads share one client (one ``requests.Session``): no pool churn, no socket leaks.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import warnings
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request, discover_result, handshake, init_result
from rel_http import CutProxy
from test_http_sdk import SERVERS, _start, _stop

import mcpsync
from mcpsync.exceptions import ConnectionClosed, HTTPStatusError, ProtocolError, RequestTimeout

pytestmark = pytest.mark.timeout(60)


def client(url: str, **kw: Any) -> mcpsync.Client:
    kw.setdefault("timeout", 5)
    kw.setdefault("transport", "streamable-http")
    return mcpsync.Client.http(url, **kw)


def reply(request: Request, result: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.body["id"], "result": result if result is not None else {}}


# -- C6: notifications: any 2xx with an empty body is accepted -----------------------------------

NOTIFICATION_ANSWERS = {
    "202": (202, "text/plain"),
    "200-empty": (200, "text/plain"),
    "204": (204, "text/plain"),
    "202-json-empty": (202, "application/json-explicit"),
    "200-html-empty": (200, "text/html"),
}


@pytest.mark.parametrize("cell", sorted(NOTIFICATION_ANSWERS))
def test_notification_accepted_by_any_empty_2xx(cell: str) -> None:
    status, ctype = NOTIFICATION_ANSWERS[cell]

    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "notifications/initialized":
            if ctype == "application/json-explicit":
                conn.send(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n")
            elif status == 204:
                conn.send("HTTP/1.1 204 No Content\r\n\r\n")
            else:
                conn.respond(status, b"", ctype=ctype)
        elif request.rpc_method == "ping":
            conn.respond(200, reply(request))
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url, listen=False) as c:
        c.ping()  # the connection still works after the notification's answer was read
        assert len(server.rpc("notifications/initialized")) == 1


# -- C6: requests: JSON, SSE, 202 + reply on the GET stream, or a ProtocolError ------------------


def test_request_answered_with_json_and_with_sse() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "tools/list":
            conn.respond(200, reply(request, {"tools": []}))
        elif request.rpc_method == "ping":
            conn.start_sse()
            conn.message(reply(request))
            conn.end()
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url, listen=False) as c:
        assert c.list_tools() == []
        c.ping()


def test_request_answered_202_gets_its_reply_on_the_get_stream() -> None:
    streams: list[Conn] = []
    opened = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET":
            conn.start_sse()
            streams.append(conn)
            opened.set()
            conn.hold()
        elif request.rpc_method == "ping":
            conn.respond(202, b"", ctype="text/plain")
            assert opened.wait(5)
            streams[0].message(reply(request))
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url) as c:
        c.ping()
        assert [r.method for r in server.requests].count("GET") == 1


def test_request_answered_202_and_never_replied_times_out_at_its_deadline() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "ping":
            conn.respond(202, b"", ctype="text/plain")
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url, listen=False) as c:
        with pytest.raises(RequestTimeout):
            c.ping(timeout=0.5)


@pytest.mark.parametrize("ctype", ["text/html", "text/plain"])
def test_request_answered_200_html_is_a_protocol_error_for_that_request(ctype: str) -> None:
    portal = "<html><body>Please sign in to the Wi-Fi</body></html>"

    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "ping":
            conn.respond(200, portal, ctype=ctype)
        elif request.rpc_method == "tools/list":
            conn.respond(200, reply(request, {"tools": []}))
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url, listen=False) as c:
        with pytest.raises(ProtocolError, match=ctype):
            c.ping()
        assert c.list_tools() == []  # only that request failed


# -- C6: GET answered without a stream: stop trying, no reconnect loop ---------------------------

GET_ANSWERS = {
    "405": (405, "", "text/plain"),
    "404": (404, "", "text/plain"),
    "400": (400, '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}', "application/json"),
    "200-html": (200, "<html>SPA fallback</html>", "text/html"),
    "200-json-error": (200, '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}',
                       "application/json"),
}


@pytest.mark.parametrize("cell", sorted(GET_ANSWERS))
def test_get_without_a_stream_is_not_retried(cell: str) -> None:
    status, body, ctype = GET_ANSWERS[cell]
    second_get = threading.Event()
    gets: list[Request] = []

    def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET":
            gets.append(request)
            if len(gets) > 1:
                second_get.set()
            conn.respond(status, body, ctype=ctype)
        elif request.rpc_method == "ping":
            conn.respond(200, reply(request))
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url, retry_delay=0.02, max_retry_delay=0.05) as c:
        c.ping()
        # A reconnect would come within ~0.05 s; 40x that without one is "no loop".
        assert not second_get.wait(2.0)
        c.ping()
    assert len(gets) == 1


# -- C10: the version header and era detection ---------------------------------------------------


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_protocol_version_header_follows_the_negotiated_version(version: str) -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "initialize":
            conn.respond(200, init_result(request, version), headers={"Mcp-Session-Id": "s1"})
        elif request.rpc_method == "ping":
            conn.respond(200, reply(request))
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url) as c:
        assert c.protocol_version == version
        c.ping()
    init = server.rpc("initialize")[0]
    assert "mcp-protocol-version" not in init.headers  # nothing negotiated yet
    for method in ("notifications/initialized", "ping"):
        assert server.rpc(method)[0].headers["mcp-protocol-version"] == version
    get = next(r for r in server.requests if r.method == "GET")
    assert get.headers["mcp-protocol-version"] == version
    delete = next(r for r in server.requests if r.method == "DELETE")
    assert delete.headers["mcp-protocol-version"] == version


def test_modern_server_gets_version_and_method_headers_and_no_initialize() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "server/discover":
            conn.respond(200, discover_result(request))
        elif request.rpc_method == "tools/list":
            conn.respond(200, reply(request, {"tools": []}))
        else:
            conn.respond(405, b"", ctype="text/plain")

    with FaultServer(handler) as server, mcpsync.Client.http(server.url, timeout=5) as c:
        assert c.protocol_version == "2026-07-28"
        assert c.list_tools() == []
    assert not server.rpc("initialize")
    assert not [r for r in server.requests if r.method in ("GET", "DELETE")]
    listed = server.rpc("tools/list")[0]
    assert listed.headers["mcp-protocol-version"] == "2026-07-28"
    assert listed.headers["mcp-method"] == "tools/list"


def test_unsupported_version_400_on_a_request_names_the_servers_answer() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "ping":
            conn.respond(400, {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "Unsupported protocol version: 2025-11-25"}})
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, client(server.url, listen=False) as c:
        with pytest.raises(HTTPStatusError, match="Unsupported protocol version") as info:
            c.ping()
        assert info.value.status == 400


@pytest.mark.parametrize("failure", ["401", "dropped"])
def test_auto_never_falls_back_to_legacy_on_401_or_a_network_error(failure: str) -> None:
    def handler(request: Request, conn: Conn) -> None:
        if failure == "401":
            conn.respond(401, b"", ctype="text/plain", headers={"WWW-Authenticate": 'Bearer realm="x"'})
        else:
            conn.sock.shutdown(2)

    with FaultServer(handler) as server:
        with pytest.raises((HTTPStatusError, ConnectionClosed, mcpsync.exceptions.AuthError)) as info:
            mcpsync.Client.http(server.url, timeout=5, transport="auto").connect()
        if failure == "401":
            assert getattr(info.value, "status", 401) == 401
        assert not [r for r in server.requests if r.method == "GET"]  # no legacy attempt


# -- C11: an intermediary cuts a long tool call -------------------------------------------------


#: An SSE comment after which the proxy cuts (so the events before it reached the client).
CUT = ": cut-here\n\n"


def _cut_when(busy: threading.Event, proxy: CutProxy) -> threading.Thread:
    def run() -> None:
        if busy.wait(10):
            proxy.cut()

    thread = threading.Thread(target=run, name="test-cutter", daemon=True)
    thread.start()
    return thread


def test_cut_after_an_event_id_resumes_without_reposting_the_call() -> None:
    busy = threading.Event()
    calls: list[Request] = []

    def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET" and request.headers.get("last-event-id") == "e1":
            conn.start_sse()
            conn.message(reply(calls[0], {"content": [{"type": "text", "text": "done"}]}), "e2")
            conn.hold()
        elif request.rpc_method == "tools/call":
            calls.append(request)
            conn.start_sse()
            conn.event("id: e1\nretry: 20\ndata:\n\n")
            conn.event(CUT)  # the proxy cuts once it forwarded this, so e1 reached the client
            conn.hold()  # still working when the proxy cuts
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, CutProxy(server.port, cut_after=CUT.encode()) as proxy:
        cutter = _cut_when(busy, proxy)
        with client(proxy.url, listen=False) as c:
            assert c.call_tool("slow", {}).text == "done"
        cutter.join(5)
        assert len(server.rpc("tools/call")) == 1
        assert not server.rpc("notifications/cancelled")  # 2025-11-25: a disconnect is no cancel


@pytest.mark.parametrize("era", ["2025-11-25-json", "2025-11-25-sse-no-id", "2026-07-28"])
def test_cut_without_resumption_fails_outcome_unknown_and_never_reposts(era: str) -> None:
    busy = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        method = request.rpc_method
        if era == "2026-07-28" and method == "server/discover":
            conn.respond(200, discover_result(request))
        elif method == "tools/list":
            conn.respond(200, reply(request, {"tools": []}))
        elif method == "tools/call":
            if era != "2025-11-25-json":
                conn.start_sse()
                # An id the modern era must not resume from (its streams cannot be resumed).
                conn.event("id: e1\nretry: 20\ndata:\n\n" if era == "2026-07-28" else ": working\n\n")
                conn.event(CUT)
            busy.set()
            conn.hold()
        elif not handshake(request, conn):
            conn.respond(405, b"", ctype="text/plain")

    transport = "auto" if era == "2026-07-28" else "streamable-http"
    with FaultServer(handler) as server, CutProxy(server.port, cut_after=CUT.encode()) as proxy:
        cutter = _cut_when(busy, proxy)
        with client(proxy.url, listen=False, transport=transport, timeout=20) as c:
            assert c.protocol_version == era[:10]
            with pytest.raises(ConnectionClosed) as info:
                c.call_tool("slow", {})
            assert info.value.outcome_unknown
        cutter.join(5)
        assert len(server.rpc("tools/call")) == 1
        assert not [r for r in server.requests if "last-event-id" in r.headers]


# -- C12: one client, one requests.Session, many threads ----------------------------------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/self/fd")
def test_many_threads_reuse_pooled_connections_beside_the_get_stream() -> None:
    threads_n, calls_n = 24, 20
    get_open = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET":
            conn.start_sse()
            get_open.set()
            conn.hold()  # the listening stream pins its connection for the whole test
        elif request.rpc_method == "ping":
            conn.respond(200, reply(request))
        else:
            handshake(request, conn)

    errors: list[BaseException] = []
    before = _open_fds()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with FaultServer(handler) as server:
            with client(server.url) as c:
                assert get_open.wait(5)
                start = threading.Barrier(threads_n, timeout=10)

                def work() -> None:
                    try:
                        start.wait()
                        for _ in range(calls_n):
                            c.ping()
                    except BaseException as exc:  # collected and asserted below
                        errors.append(exc)

                workers = [threading.Thread(target=work, name=f"test-c12-{i}") for i in range(threads_n)]
                for t in workers:
                    t.start()
                for t in workers:
                    t.join(30)
                assert not any(t.is_alive() for t in workers)
            accepted = len(server._socks)
        del c
        gc.collect()
    assert errors == []
    # Pool sized to concurrency: one connection per thread at most, plus the GET stream and the
    # handshake's (a pool of requests' default 10 would discard and reopen hundreds).
    assert accepted <= threads_n + 3, accepted
    assert _open_fds() <= before + 2
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


@pytest.mark.timeout(90)
def test_threads_against_the_sdk_server_with_a_caller_session() -> None:
    import requests

    proc, port = _start([sys.executable, str(SERVERS / "http_sdk.py"), "--transport", "streamable"])
    session = requests.Session()
    errors: list[BaseException] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            with mcpsync.Client.http(f"http://127.0.0.1:{port}/mcp", session=session, timeout=20) as c:
                def work(i: int) -> None:
                    try:
                        for j in range(5):
                            assert c.call_tool("echo", {"text": f"{i}-{j}"}).text == f"{i}-{j}"
                    except BaseException as exc:  # collected and asserted below
                        errors.append(exc)

                workers = [threading.Thread(target=work, args=(i,), name=f"test-c12-sdk-{i}")
                           for i in range(16)]
                for t in workers:
                    t.start()
                for t in workers:
                    t.join(60)
            del c
            gc.collect()
        assert errors == []
        assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
        # The caller's session is the caller's: still usable after the client closed.
        assert session.get(f"http://127.0.0.1:{port}/mcp", timeout=5).status_code >= 200
    finally:
        session.close()
        _stop(proc)
