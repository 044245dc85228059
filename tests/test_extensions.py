"""Protocol extensions (SEP-2133): advertising, per-request settings, the server's, typed fields.

The peer is the official SDK's ``MCPServer`` with a user-defined extension,
``com.example/audit`` (``tests/servers/ext_server.py``), over stdio in both eras.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

import mcpsync
from mcpsync import types

SERVER = [sys.executable, str(Path(__file__).resolve().parent / "servers" / "ext_server.py")]
AUDIT = "com.example/audit"

pytestmark = pytest.mark.timeout(60)


@attrs.define
class AuditRecord:
    """What the audit extension puts in a result's ``_meta`` (the user's own type)."""

    ticket: str
    level: str = "basic"


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def seen_capabilities(client: mcpsync.Client, **kwargs: Any) -> dict[str, Any]:
    result = client.call_tool("capabilities", **kwargs)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_client_extensions_are_advertised_in_both_eras(mode: str) -> None:
    with mcpsync.Client.stdio(SERVER, mode=mode, extensions={AUDIT: {"level": "full"}, "com.example/bare": None}) as c:
        assert c.era == ("modern" if mode == "auto" else "legacy")
        caps = seen_capabilities(c)
        assert caps["extensions"] == {AUDIT: {"level": "full"}, "com.example/bare": {}}
        # The server acted on it: its audit record, read as the user's own type.
        result = c.call_tool("echo", {"text": "hi"})
        assert types.meta_field(result, AUDIT, AuditRecord) == AuditRecord("T-1", "full")


def test_server_extensions_from_discover() -> None:
    with mcpsync.Client.stdio(SERVER) as c:
        assert c.era == "modern"
        assert c.server_extensions == {AUDIT: {"version": 2}}


def test_server_extensions_empty_when_none_declared(everything_server: list[str]) -> None:
    with mcpsync.Client.stdio(everything_server) as c:
        assert c.server_extensions == {}


def test_extensions_are_off_unless_asked_for(mode: str) -> None:
    with mcpsync.Client.stdio(SERVER, mode=mode) as c:
        assert "extensions" not in seen_capabilities(c)
        assert types.meta_field(c.call_tool("echo", {"text": "hi"}), AUDIT, AuditRecord) is None


def test_per_request_extension_settings() -> None:
    with mcpsync.Client.stdio(SERVER, extensions={"com.example/bare": {}}, sampling_handler=lambda p: None) as c:
        meta = c.extension_meta({AUDIT: {"level": "full"}})
        caps = seen_capabilities(c, meta=meta)
        # This request only: the extension, with the client's other capabilities kept.
        assert caps["extensions"] == {"com.example/bare": {}, AUDIT: {"level": "full"}}
        assert "sampling" in caps
        assert types.meta_field(c.call_tool("echo", {"text": "x"}, meta=meta), AUDIT, AuditRecord) == AuditRecord(
            "T-1", "full"
        )
        # The next request is back to the client's own set.
        assert seen_capabilities(c)["extensions"] == {"com.example/bare": {}}
        # Per-request settings win over the client's for the same extension.
        caps = seen_capabilities(c, meta=c.extension_meta({"com.example/bare": {"x": 1}}))
        assert caps["extensions"] == {"com.example/bare": {"x": 1}}
        # Through the raw escape hatch too.
        raw = c.request("tools/call", {"name": "capabilities", "arguments": {}, "_meta": meta})
        assert raw["structuredContent"]["extensions"][AUDIT] == {"level": "full"}


def test_per_request_meta_is_empty_in_the_handshake_era() -> None:
    with mcpsync.Client.stdio(SERVER, mode="legacy") as c:
        assert c.extension_meta({AUDIT: {}}) == {}


@pytest.mark.parametrize(
    "extensions, error",
    [
        ({"audit": {}}, ValueError),  # no vendor prefix
        ({"com.example/": {}}, ValueError),
        ({"-bad.example/x": {}}, ValueError),
        ({"com.example/audit": ["not", "a", "mapping"]}, TypeError),
    ],
)
def test_bad_extension_arguments_fail_at_construction(extensions: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        mcpsync.Client.stdio(SERVER, extensions=extensions)  # nothing is started


def test_extension_ids() -> None:
    for good in ("io.modelcontextprotocol/tasks", "com.example/my-extension", "a/b", "x.y-z/n_a.m-e"):
        assert types.check_extension_id(good) == good
    for bad in ("tasks", "/tasks", "com.example/", "com..example/x", "com.example/-x", "1com/x", 5):
        with pytest.raises(ValueError):
            types.check_extension_id(bad)  # type: ignore[arg-type]


def test_typed_result_fields() -> None:
    result = types.from_wire(
        types.CallToolResult,
        {"content": [], "auditTicket": "T-9", "_meta": {AUDIT: {"ticket": "T-9"}}},
    )
    assert types.result_field(result, "auditTicket", str) == "T-9"
    assert types.result_field(result, "auditTicket") == "T-9"
    assert types.result_field(result, "missing", str) is None
    assert types.meta_field(result, AUDIT, AuditRecord) == AuditRecord("T-9")
    assert types.meta_field(result, "com.example/other", AuditRecord) is None
    bad = types.from_wire(types.CallToolResult, {"content": [], "auditTicket": 5, "_meta": {AUDIT: {"level": 1}}})
    with pytest.raises(mcpsync.ProtocolError):
        types.result_field(bad, "auditTicket", str)
    with pytest.raises(mcpsync.ProtocolError):
        types.meta_field(bad, AUDIT, AuditRecord)
