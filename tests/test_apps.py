"""MCP Apps on the client and in mcpsync.llm, against a real Apps server.

The peer is ``tests/servers/apps_server.py``, built with the official SDK's ``mcp.server.apps``,
over stdio and Streamable HTTP, in both eras.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcpsync
from mcpsync import types
from mcpsync.llm import anthropic_tools, openai_tools, run_tool_calls
from test_http_sdk import _start, _stop

SERVER = [sys.executable, str(Path(__file__).resolve().parent / "servers" / "apps_server.py")]
DEMO = [sys.executable, "-m", "mcpsync.demo"]

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    proc, port = _start([*SERVER, "--http"])
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(proc)


@pytest.fixture(params=["stdio-auto", "stdio-legacy", "http-auto", "http-legacy"])
def connect(request: pytest.FixtureRequest, http_url: str) -> Any:
    transport, mode = request.param.split("-")

    def make(**options: Any) -> mcpsync.Client:
        if transport == "stdio":
            return mcpsync.Client.stdio(SERVER, mode=mode, **options)
        return mcpsync.Client.http(http_url, mode=mode, **options)

    make.era = "modern" if mode == "auto" else "legacy"  # type: ignore[attr-defined]
    return make


def test_advertising_is_seen_by_the_servers_client_supports_apps(connect: Any) -> None:
    with connect(apps=True) as client:
        assert client.era == connect.era
        assert client.call_tool("plain").text == "apps=True"
        assert client.call_tool("dashboard", {"note": "x"}).structured_content == {"note": "x", "apps": True}
    with connect() as client:
        assert client.call_tool("plain").text == "apps=False"
    # Other extensions stay advertised beside it.
    with connect(apps=True, extensions={"com.example/other": {"a": 1}}) as client:
        assert client.call_tool("plain").text == "apps=True"


def test_tool_metadata_and_visibility(connect: Any) -> None:
    with connect(apps=True) as client:
        tools = {tool.name: tool for tool in client.list_tools()}
    assert tools["dashboard"].ui == types.ToolUi("ui://demo/dashboard.html", ("model", "app"))
    assert tools["refresh"].ui == types.ToolUi("ui://demo/dashboard.html", ("app",))
    assert (tools["refresh"].ui.model_visible, tools["refresh"].ui.app_visible) == (False, True)
    assert (tools["model_only"].ui.model_visible, tools["model_only"].ui.app_visible) == (True, False)
    assert tools["flat"].ui == types.ToolUi("ui://demo/blob.html")  # the deprecated flat key
    assert tools["plain"].ui is None


def test_read_app_text_blob_and_list_vs_read_meta(connect: Any) -> None:
    with connect(apps=True) as client:
        dashboard = client.read_app(next(t for t in client.list_tools() if t.name == "dashboard"))
        blob = client.read_app("ui://demo/blob.html")
        override = client.read_app("ui://demo/override.html")
        bad = client.read_app("ui://demo/bad-csp.html")
        with pytest.raises(mcpsync.AppResourceError, match="mimeType text/html"):
            client.read_app("ui://demo/wrong.html")
        for not_ui in ("https://example.com/app.html", "file:///etc/passwd"):
            with pytest.raises(mcpsync.AppResourceError, match="not a ui:// URI"):
                client.read_app(not_ui)
        with pytest.raises(mcpsync.AppResourceError, match="has no UI"):
            client.read_app(next(t for t in client.list_tools() if t.name == "plain"))
    assert dashboard.uri == "ui://demo/dashboard.html" and dashboard.html.startswith("<!doctype html>")
    assert dashboard.mime_type == types.APP_MIME_TYPE
    assert dashboard.csp == types.AppCsp(("https://api.example.com",), ("https://cdn.example.com",))
    assert dashboard.permissions == frozenset({"clipboardWrite"}) and dashboard.prefers_border is True
    assert blob.html == "<!doctype html><html><body><p>blob app: caf\u00e9</p></body></html>"
    assert (blob.csp, blob.permissions, blob.domain, blob.prefers_border) == (types.AppCsp(), frozenset(), None, None)
    # resources/read's csp and prefersBorder win, taken whole; the list entry's domain fills in.
    assert override.csp == types.AppCsp(resource_domains=("https://read.example.com",))
    assert (override.domain, override.prefers_border) == ("list.example.com", True)
    # Only origins reach the header: "*", keywords and injected directives are dropped.
    assert bad.csp.connect_domains == ("https://ok.example.com",)
    assert "connect-src https://ok.example.com;" in bad.csp_header()


def test_csp_header() -> None:
    default = types.AppResource("ui://a", "<p>").csp_header()
    assert default == (
        "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline';"
        " img-src 'self' data:; media-src 'self' data:; connect-src 'none'; frame-src 'none';"
        " object-src 'none'; base-uri 'self'"
    )
    declared = types.AppResource("ui://a", "<p>", csp=types.AppCsp(
        ("https://api.example.com", "wss://rt.example.com"), ("https://*.cdn.example.com",),
        ("https://www.youtube.com",), ("https://base.example.com",),
    )).csp_header()
    directives = dict(d.split(" ", 1) for d in declared.split("; "))
    res = "https://*.cdn.example.com"
    assert directives == {
        "default-src": "'none'", "script-src": f"'self' 'unsafe-inline' {res}",
        "style-src": f"'self' 'unsafe-inline' {res}", "img-src": f"'self' data: {res}",
        "font-src": f"'self' {res}", "media-src": f"'self' data: {res}",
        "connect-src": "https://api.example.com wss://rt.example.com", "frame-src": "https://www.youtube.com",
        "object-src": "'none'", "base-uri": "https://base.example.com",
    }
    assert "*" not in declared.replace("*.", "")


def test_tool_ui_parsing_fails_closed() -> None:
    def ui(meta: Any) -> Any:
        return types.Tool("t", {}, meta=meta).ui

    assert ui(None) is None and ui({"other": 1}) is None
    assert ui({"ui": {"visibility": ["app"]}}) == types.ToolUi(None, ("app",))
    assert ui({"ui": {"resourceUri": "ui://x", "visibility": "app"}}).visibility == ("app",)
    assert ui({"ui": {"resourceUri": "ui://x", "visibility": ["app", "later"]}}).visibility == ("app",)
    assert ui({"ui": {"resourceUri": "ui://x", "visibility": 7}}).visibility == ()  # hidden from both
    assert ui({"ui": {"resourceUri": 5}}) == types.ToolUi(None)
    # The nested form wins over the deprecated flat one.
    assert ui({"ui": {"resourceUri": "ui://new"}, "ui/resourceUri": "ui://old"}).resource_uri == "ui://new"


def test_call_tool_caller_is_checked_before_sending(connect: Any) -> None:
    with connect(apps=True) as client:
        # The tools are listed first when the client has none.
        with pytest.raises(mcpsync.ToolNotVisible, match="'refresh' is not for the model") as caught:
            client.call_tool("refresh", {"n": 1}, caller="model")
        assert (caught.value.name, caught.value.caller) == ("refresh", "model")
        with pytest.raises(mcpsync.ToolNotVisible, match="not for the app"):
            client.call_tool("model_only", caller="app")
        with pytest.raises(mcpsync.ToolNotVisible, match="lists no such tool"):
            client.call_tool("add", {"a": 1, "b": 2}, caller="app")
        with pytest.raises(ValueError, match="caller must be"):
            client.call_tool("refresh", caller="user")
        assert client.call_tool("refresh", {"n": 3}, caller="app").text == "refreshed 3"
        assert client.call_tool("model_only", caller="model").text == "model only"
        assert client.call_tool("plain", caller="app").text == "apps=True"  # no _meta.ui: both
        assert client.call_tool("refresh", {"n": 4}).text == "refreshed 4"  # None checks nothing


def test_refused_call_sends_nothing() -> None:
    seen: list[str] = []

    def spy(request: Any, call_next: Any) -> Any:
        seen.append(request.method)
        return call_next(request)

    with mcpsync.Client.stdio(SERVER, apps=True, interceptors=[spy]) as client:
        client.list_tools()
        seen.clear()
        with pytest.raises(mcpsync.ToolNotVisible):
            client.call_tool("model_only", caller="app")
        assert seen == []


def test_apps_key_of_an_mcpservers_entry(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "on": {"command": SERVER[0], "args": SERVER[1:], "apps": True},
        "off": {"command": SERVER[0], "args": SERVER[1:]},
        "bad": {"command": SERVER[0], "args": SERVER[1:], "apps": "yes"},
    }}))
    with mcpsync.Client.from_config(path, "on") as client:
        assert client.call_tool("plain").text == "apps=True"
    with mcpsync.Client.from_config(path, "off") as client:
        assert client.call_tool("plain").text == "apps=False"
    with pytest.raises(mcpsync.config.ConfigError, match="'apps' must be true or false"):
        mcpsync.Client.from_config(path, "bad")


# -- mcpsync.llm ------------------------------------------------------------------------------


def _openai_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}}]}


@pytest.mark.parametrize("kind", ["client", "group"])
def test_llm_never_offers_or_runs_a_tool_hidden_from_the_model(kind: str) -> None:
    seen: list[str] = []

    def spy(request: Any, call_next: Any) -> Any:
        if request.method == "tools/call":
            seen.append(request.params["name"])
        return call_next(request)

    if kind == "client":
        source: Any = mcpsync.Client.stdio(SERVER, apps=True, interceptors=[spy])
        prefix = ""
    else:
        source = mcpsync.ClientGroup({
            "apps": lambda: mcpsync.Client.stdio(SERVER, apps=True, interceptors=[spy]),
            "demo": lambda: mcpsync.Client.stdio(DEMO),
        })
        prefix = "apps__"
    with source:
        listed = {tool.name for tool in source.list_tools()}
        assert {f"{prefix}refresh", f"{prefix}model_only"} <= listed  # list_tools lists every tool
        offered = {t["function"]["name"] for t in openai_tools(source)}
        assert offered == listed - {f"{prefix}refresh"}
        assert {t["name"] for t in openai_tools(source, api="responses")} == offered
        assert {t["name"] for t in anthropic_tools(source)} == offered
        [answer] = run_tool_calls(source, _openai_call(f"{prefix}refresh", {"n": 1}))
        assert answer["content"].startswith("Error: ") and "refresh" in answer["content"]
        [anthropic] = run_tool_calls(source, {"type": "message", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": f"{prefix}refresh", "input": {"n": 1}}]})
        assert anthropic["content"][0]["is_error"] is True
        assert seen == []  # nothing was sent for the hidden tool
        [ok] = run_tool_calls(source, _openai_call(f"{prefix}model_only", {}))
        assert ok["content"] == "model only" and seen == ["model_only"]


def test_malformed_app_content_is_a_typed_error() -> None:
    def content(**fields: Any) -> Any:
        return types.from_wire(types.ReadResourceResult, {"contents": [{"uri": "ui://a", **fields}]}).contents[0]

    html = {"mimeType": types.APP_MIME_TYPE, "text": "<p>"}
    bad = [
        ({"mimeType": "text/html", "text": "<p>"}, "mimeType text/html"),
        ({"text": "<p>"}, "mimeType None"),
        ({"mimeType": types.APP_MIME_TYPE, "blob": "not base64!"}, "not base64-encoded UTF-8"),
        ({"mimeType": types.APP_MIME_TYPE, "blob": "//79"}, "not base64-encoded UTF-8"),  # not UTF-8
        ({**html, "_meta": {"ui": 5}}, "malformed _meta.ui"),
        ({**html, "_meta": {"ui": {"permissions": ["camera"]}}}, "malformed _meta.ui"),
        ({**html, "_meta": {"ui": {"csp": {"connectDomains": "https://a.example.com"}}}}, "must be a list"),
    ]
    for fields, message in bad:
        with pytest.raises(mcpsync.AppResourceError, match=message):
            types.app_resource("ui://a", content(**fields))
    # Absent or null _meta.ui: nothing declared, the restrictive default.
    assert types.app_resource("ui://a", content(**html, _meta={"ui": None})).csp == types.AppCsp()
    assert types.app_resource("ui://a", content(mimeType="text/html; profile=mcp-app", text="<p>")).html == "<p>"
