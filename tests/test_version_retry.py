"""Retrying with a version the server lists after UnsupportedProtocolVersion (SEP-2575).

A scripted HTTP server refuses requests with 400 and a -32022 body, as the conformance
suite's ``request-metadata`` scenario does: the client must retry once with the version it
prefers among those listed (even the one just refused), never loop, and never fall back to
the handshake with a version the server did not list.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from http_fault import Conn, FaultServer, Request
from test_http_modern import modern_server

import mcpsync
from mcpsync.exceptions import UnsupportedProtocolVersion

pytestmark = pytest.mark.timeout(60)

MODERN = "2026-07-28"
VERSION_META = "io.modelcontextprotocol/protocolVersion"


def refuse(times: int, supported: list[str]) -> Callable[[Request, Conn], None]:
    """A modern server that refuses the first *times* requests with -32022."""
    refused: list[Request] = []

    def extra(request: Request, conn: Conn) -> bool:
        if len(refused) >= times or request.body is None:
            return False
        refused.append(request)
        conn.respond(400, {"jsonrpc": "2.0", "id": request.body.get("id"), "error": {
            "code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": supported, "requested": request.headers.get("mcp-protocol-version", "")}}})
        return True

    return modern_server(extra)


def test_first_refusal_is_retried_with_the_listed_version() -> None:
    with FaultServer(refuse(1, [MODERN])) as server:
        with mcpsync.Client.http(server.url, timeout=10, transport="streamable-http") as client:
            assert (client.era, client.protocol_version) == ("modern", MODERN)
            client.list_tools()
        first, second = server.rpc("server/discover")
    assert first.body["id"] != second.body["id"]
    for request in (second, *server.rpc("tools/list")):
        assert request.headers["mcp-protocol-version"] == MODERN
        assert request.body["params"]["_meta"][VERSION_META] == MODERN
    assert server.rpc("initialize") == []


def test_a_second_refusal_ends_negotiation_without_a_loop() -> None:
    with FaultServer(refuse(100, [MODERN])) as server:
        client = mcpsync.Client.http(server.url, timeout=10, transport="streamable-http")
        with pytest.raises(UnsupportedProtocolVersion) as info:
            client.connect()
        client.close()
        assert len(server.rpc("server/discover")) == 2  # the first try and one retry
        assert server.rpc("initialize") == []  # the server listed no handshake version
    assert info.value.requested == MODERN and info.value.supported == [MODERN]
    assert "server supports 2026-07-28" in str(info.value)


def test_a_listed_handshake_version_is_used_through_initialize() -> None:
    def answer_initialize(request: Request, conn: Conn) -> bool:
        if request.rpc_method == "server/discover":
            conn.respond(400, {"jsonrpc": "2.0", "id": request.body["id"], "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2025-06-18"], "requested": MODERN}}})
            return True
        if request.rpc_method == "initialize":
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}})
            return True
        return False

    with FaultServer(modern_server(answer_initialize)) as server:
        with mcpsync.Client.http(server.url, timeout=10, transport="streamable-http") as client:
            assert (client.era, client.protocol_version) == ("legacy", "2025-06-18")
        assert len(server.rpc("server/discover")) == 1  # nothing modern to retry with
        assert server.rpc("initialize")[0].body["params"]["protocolVersion"] == "2025-06-18"


def test_no_shared_version_names_what_the_server_speaks() -> None:
    with FaultServer(refuse(100, ["2099-01-01"])) as server:
        client = mcpsync.Client.http(server.url, timeout=10, transport="streamable-http")
        with pytest.raises(UnsupportedProtocolVersion):
            client.connect()
        client.close()
        assert len(server.rpc("server/discover")) == 1
