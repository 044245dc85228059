"""Tool schemas reach the caller exactly as sent, and a ``$ref`` is never fetched (SEP-1613, SEP-2106).

Both eras: the same tool list is served through the ``initialize`` handshake and through the
stateless wire.  A canary HTTP server stands where a network ``$ref`` points; it must see no
request, not while listing, and not while validating ``structuredContent`` against an
``outputSchema`` (jsonschema's default registry would GET such a reference).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request, handshake
from test_http_modern import modern_server

import mcpsync

pytestmark = pytest.mark.timeout(60)


def rich_schema(canary: str) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:example:lookup",
        "type": "object",
        "$defs": {
            "userId": {"type": "string", "pattern": "^[a-z0-9-]+$"},
            "address": {"$anchor": "addr", "type": "object", "properties": {"city": {"type": "string"}},
                        "unevaluatedProperties": False},
        },
        "properties": {
            "id": {"$ref": "#/$defs/userId"},
            "home": {"$ref": "#addr"},
            "profile": {"$ref": canary},
            "tags": {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
            "score": {"type": "number", "exclusiveMinimum": 0, "x-vendor": {"keep": [1, None, True]}},
        },
        "allOf": [{"anyOf": [{"required": ["id"]}, {"required": ["home"]}]}],
        "if": {"required": ["home"]}, "then": {"required": ["id"]}, "else": {},
        "dependentRequired": {"home": ["id"]},
        "additionalProperties": False,
        "x-unknown-keyword": {"nested": ["a", 1.5, {"deep": None}]},
    }


def tool_list(canary: str) -> list[dict[str, Any]]:
    return [{"name": "lookup_user", "inputSchema": rich_schema(canary),
             "outputSchema": {"type": "object", "properties": {"profile": {"$ref": canary}}}}]


@pytest.fixture
def canary() -> Iterator[FaultServer]:
    with FaultServer(lambda request, conn: conn.respond(200, {"type": "object"})) as server:
        yield server


def serve(era: str, tools: list[dict[str, Any]]) -> Callable[[Request, Conn], None]:
    def call(request: Request, conn: Conn) -> bool:
        if request.rpc_method != "tools/call":
            return False
        conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {
            "content": [{"type": "text", "text": "ok"}], "structuredContent": {"profile": {"name": "x"}}}})
        return True

    if era == "modern":
        return modern_server(call, tools=tools)

    def legacy(request: Request, conn: Conn) -> None:
        if handshake(request, conn) or call(request, conn):
            return
        if request.rpc_method == "tools/list":
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {"tools": tools}})
        else:
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {}})

    return legacy


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_input_schema_round_trips_exactly_and_no_ref_is_fetched(era: str, canary: FaultServer) -> None:
    ref = canary.url + "/canary/profile-schema.json"
    sent = tool_list(ref)
    with FaultServer(serve(era, copy.deepcopy(sent))) as server, \
            mcpsync.Client.http(server.url, timeout=10, transport="streamable-http") as client:
        assert client.era == era
        (tool,) = client.list_tools()
        assert tool.input_schema == sent[0]["inputSchema"]
        assert json.dumps(tool.input_schema) == json.dumps(sent[0]["inputSchema"])  # key order too
        assert tool.output_schema == sent[0]["outputSchema"]
        # Echoed back as an argument, it goes out as received.
        client.call_tool("lookup_user", {"schema": tool.input_schema})
        (echo,) = server.rpc("tools/call")
        assert echo.body["params"]["arguments"]["schema"] == sent[0]["inputSchema"]
    assert canary.requests == []
