"""``Mcp-Param-*`` headers (SEP-2243, 2026-07-28 Streamable HTTP, *Value Encoding*).

The encoding table is the spec's own examples plus the cases the conformance suite's
``http-custom-headers`` scenario sends; the wire test reads the headers a real HTTP server
received, so a regression shows here without the suite.
"""

from __future__ import annotations

from typing import Any

import pytest
from http_fault import FaultServer
from test_http_modern import modern_server

import mcpsync
from mcpsync.transports.http.headers import ToolHeaders, header_value

pytestmark = pytest.mark.timeout(60)

# (value, header text); None = no header at all.
TABLE: list[tuple[Any, str | None]] = [
    # the spec's examples, verbatim
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    # type conversion
    (True, "true"),
    (False, "false"),
    (42, "42"),
    (-7, "-7"),
    (42.0, "42"),
    (2**53 - 1, str(2**53 - 1)),
    (2**53, None),  # outside JavaScript's safe range: not a valid mirrored integer
    (None, None),
    # whitespace and control characters
    ("us west 1", "us west 1"),
    ("", ""),
    (" us-west1", "=?base64?IHVzLXdlc3Qx?="),
    ("us-west1 ", "=?base64?dXMtd2VzdDEg?="),
    ("\tindented", "=?base64?CWluZGVudGVk?="),
    ("line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="),
    ("a\x7fb", "=?base64?YX9i?="),
    ("=?base64?", "=?base64?"),  # only the prefix: not the sentinel pattern
]


def headers_for(value: Any, *, present: bool = True) -> dict[str, str]:
    tools = ToolHeaders()
    tools.learn({"tools": [{"name": "t", "inputSchema": {"type": "object", "properties": {
        "v": {"type": "string", "x-mcp-header": "V"}, "q": {"type": "string"}}}}]})
    return tools.headers_for("t", {"v": value, "q": "not mirrored"} if present else {"q": "x"})


@pytest.mark.parametrize(("value", "expected"), TABLE, ids=[repr(v)[:30] for v, _ in TABLE])
def test_value_encoding_table(value: Any, expected: str | None) -> None:
    headers = headers_for(value)
    assert headers.get("Mcp-Param-V") == expected
    assert set(headers) <= {"Mcp-Param-V"}  # an unannotated parameter is never mirrored


def test_absent_parameter_sends_no_header() -> None:
    assert headers_for(None, present=False) == {}


def test_mcp_name_uses_the_same_encoding() -> None:
    assert header_value("get_weather") == "get_weather"
    assert header_value("météo") == "=?base64?bcOpdMOpbw==?="


def test_nested_parameters_follow_their_property_path() -> None:
    tools = ToolHeaders()
    tools.learn({"tools": [{"name": "t", "inputSchema": {"type": "object", "properties": {
        "target": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}}}]})
    assert tools.headers_for("t", {"target": {"region": "eu"}}) == {"Mcp-Param-Region": "eu"}
    assert tools.headers_for("t", {"target": None}) == {}
    assert tools.headers_for("t", {}) == {}


def test_headers_on_the_wire() -> None:
    """What a real HTTP server receives for a call of a listed tool."""
    schema = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "debug": {"type": "boolean", "x-mcp-header": "Debug"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "greeting": {"type": "string", "x-mcp-header": "Greeting"},
        "empty": {"type": "string", "x-mcp-header": "Empty"},
        "query": {"type": "string"},
    }}
    with FaultServer(modern_server(tools=[{"name": "t", "inputSchema": schema}])) as server, \
            mcpsync.Client.http(server.url, timeout=10, transport="streamable-http") as client:
        client.list_tools()
        client.call_tool("t", {"region": "us-west1", "verbose": False, "debug": True, "priority": 42,
                               "greeting": "Hello, 世界", "empty": "", "query": "SELECT 1"})
        client.call_tool("t", {"region": "x", "verbose": None})
        first, second = server.rpc("tools/call")
    mirrored = {k: v for k, v in first.headers.items() if k.startswith("mcp-param-")}
    assert mirrored == {"mcp-param-region": "us-west1", "mcp-param-verbose": "false",
                        "mcp-param-debug": "true", "mcp-param-priority": "42",
                        "mcp-param-greeting": "=?base64?SGVsbG8sIOS4lueVjA==?=", "mcp-param-empty": ""}
    assert first.headers["mcp-name"] == "t" and first.headers["mcp-method"] == "tools/call"
    assert {k: v for k, v in second.headers.items() if k.startswith("mcp-param-")} == {"mcp-param-region": "x"}
