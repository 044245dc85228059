"""HTTP bodies: read incrementally against the cap, compressed ones decoded (issue 27 items 5, 13).

* The official SDK's server behind Starlette's ``GZipMiddleware`` (every response gzipped, event
  streams too, as a compressing proxy does): every feature works, in each HTTP mode.
* A raw-socket server streams a huge reply (plain or a decompression bomb): the call fails with
  :class:`~mcpsync.MessageTooLarge` and the client's memory stays near the cap, measured with
  ``tracemalloc`` (a body joined whole would cost its full size).
* A refused WebSocket upgrade whose body never ends (websocket-client reads it whole): the
  upgrade is cut at ``connect_timeout``.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
import tracemalloc
import urllib.request
import zlib
from collections.abc import Iterator
import pytest
from http_fault import Conn, FaultServer, Request, handshake
from test_http_sdk import SERVERS, _start, _stop

import mcpsync
from mcpsync import types
from mcpsync.exceptions import MessageTooLarge, ProtocolError, ServerStartError

pytestmark = pytest.mark.timeout(90)

MiB = 1024 * 1024
CAP = 1 * MiB
#: What the huge bodies stream (or expand to): far beyond the cap.
HUGE = 64 * MiB
#: Peak memory allowed while refusing a huge body: generous, yet a fraction of HUGE.
PEAK_BOUND = 16 * MiB

MODES = {
    "json": (["--transport", "streamable", "--json"], "/mcp"),
    "sse": (["--transport", "streamable"], "/mcp"),
    "legacy": (["--transport", "sse"], "/sse"),
}


@pytest.fixture(params=sorted(MODES))
def gzip_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    argv, path = MODES[request.param]
    proc, port = _start([sys.executable, str(SERVERS / "http_sdk.py"), *argv, "--gzip"])
    try:
        yield request.param, f"http://127.0.0.1:{port}{path}"
    finally:
        _stop(proc)


def _compresses(url: str, mode: str) -> bool:
    """Whether the server really gzips (a raw request that accepts gzip)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    request = urllib.request.Request(url, data=None if mode == "legacy" else body.encode(), headers={
        "Accept": "application/json, text/event-stream", "Content-Type": "application/json",
        "Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers.get("Content-Encoding") == "gzip"


def test_a_server_that_gzips_every_reply_works_in_every_mode(gzip_server: tuple[str, str]) -> None:
    mode, url = gzip_server
    assert _compresses(url, mode)
    with mcpsync.Client.http(url, mode="legacy", timeout=10) as c:
        assert c.server_info.name == "sdk-test-server"
        assert "echo" in [t.name for t in c.list_tools()]
        assert c.call_tool("echo", {"text": "hé" * 5000}).text == "hé" * 5000
        assert len(c.list_resources()) == 8
        assert c.read_resource("memo://note/1").contents[0].text == "note 1"  # type: ignore[union-attr]
        assert c.get_prompt("greet", {"name": "Ann"}).messages
        assert c.complete(types.PromptReference(name="greet"), "style", "f").values is not None
        c.ping()


# -- hostile bodies from a raw-socket server ---------------------------------------------------------


def _bomb(prefix: bytes) -> bytes:
    """*prefix* and HUGE bytes of zeros, gzipped (about a thousandth of that)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"0" * MiB
    return b"".join([packer.compress(prefix)] + [packer.compress(block) for _ in range(HUGE // MiB)]
                    + [packer.flush()])


def _chunked(conn: Conn, head: str, pieces: Iterator[bytes]) -> None:
    conn.send(head + "Transfer-Encoding: chunked\r\n\r\n")
    try:
        for piece in pieces:
            conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        conn.send(b"0\r\n\r\n")
    except OSError:
        pass  # the client stopped reading at its cap


def _repeat(block: bytes, total: int) -> Iterator[bytes]:
    for _ in range(total // len(block)):
        yield block


def _huge(kind: str, conn: Conn) -> None:
    block = b"0" * 65536
    if kind == "json-length":
        conn.send(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {HUGE}\r\n\r\n")
        try:
            for piece in _repeat(block, HUGE):
                conn.send(piece)
        except OSError:
            pass
    elif kind == "json-chunked":
        _chunked(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", _repeat(block, HUGE))
    elif kind == "json-gzip-bomb":
        conn.respond(200, _bomb(b'{"pad":"'), headers={"Content-Encoding": "gzip"})
    else:  # one event that never ends, expanding far past the cap
        conn.respond(200, _bomb(b"data: "), ctype="text/event-stream", headers={"Content-Encoding": "gzip"})


@pytest.mark.parametrize("kind", ["json-length", "json-chunked", "json-gzip-bomb", "sse-gzip-bomb"])
def test_a_huge_reply_stops_at_the_cap_in_bounded_memory(kind: str) -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "tools/list":
            _huge(kind, conn)
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, mcpsync.Client.http(
            server.url, transport="streamable-http", max_message_bytes=CAP, timeout=30, retry=False) as c:
        c.connect()
        tracemalloc.start()
        try:
            with pytest.raises(MessageTooLarge):
                c.list_tools()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < PEAK_BOUND, f"peak {peak / MiB:.1f} MiB"


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate", "gzip-two-members"])
def test_compressed_json_and_sse_replies_are_decoded(coding: str) -> None:
    def pack(data: bytes) -> bytes:
        if coding == "gzip":
            return gzip.compress(data)
        if coding == "gzip-two-members":
            return gzip.compress(data[:10]) + gzip.compress(data[10:])
        if coding == "deflate":
            return zlib.compress(data)
        packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()

    name = "raw-deflate" if coding == "raw-deflate" else coding.split("-")[0]
    header = "deflate" if name == "raw-deflate" else name

    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "tools/list":
            reply = {"jsonrpc": "2.0", "id": request.body["id"], "result": {"tools": [
                {"name": "t" * 300, "inputSchema": {"type": "object"}}]}}
            conn.respond(200, pack(json.dumps(reply).encode()), headers={"Content-Encoding": header})
        elif request.rpc_method == "ping":
            event = f"data: {json.dumps({'jsonrpc': '2.0', 'id': request.body['id'], 'result': {}})}\n\n"
            conn.respond(200, pack(event.encode()), ctype="text/event-stream",
                         headers={"Content-Encoding": header})
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, mcpsync.Client.http(server.url, transport="streamable-http",
                                                             timeout=5, retry=False) as c:
        assert [t.name for t in c.list_tools()] == ["t" * 300]
        c.ping()
        assert server.rpc("tools/list")[0].headers["accept-encoding"] == "gzip, deflate"


def test_an_encoding_the_client_did_not_offer_is_a_protocol_error() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "tools/list":
            conn.respond(200, b"\x1b\x00\x00", headers={"Content-Encoding": "br"})
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, mcpsync.Client.http(server.url, transport="streamable-http",
                                                             timeout=5, retry=False) as c:
        with pytest.raises(ProtocolError, match="encoding"):
            c.list_tools()


def test_a_refused_websocket_upgrade_with_an_endless_body_ends_by_connect_timeout() -> None:
    # websocket-client reads a refused upgrade's body whole: the upgrade is cut at connect_timeout.
    def handler(request: Request, conn: Conn) -> None:
        conn.send(f"HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: {1024 * MiB}\r\n\r\n")
        block = b"x" * 65536
        try:
            while not conn.server.stopping.is_set():
                conn.send(block)
        except OSError:
            pass  # the client cut the connection

    with FaultServer(handler) as server:
        client = mcpsync.Client.websocket(server.url.replace("http", "ws"), timeout=30, connect_timeout=2.0)
        start = time.monotonic()
        with pytest.raises(ServerStartError, match="did not complete the upgrade within 2.0 s"):
            client.connect()
        assert time.monotonic() - start < 2.0 + 3.0
        client.close()
