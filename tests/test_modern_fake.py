"""``FakeServer(era=...)``: testing your own code against a 2026-07-28 server, in-process.

Everything goes through :class:`mcpsync.Client`; the server's replies are recorded and checked
against the 2026-07-28 JSON Schema, so the fake is held to the spec, not just to our client.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest
from schema_util import validate_against

import mcpsync
from mcpsync import types
from mcpsync.client import options as _options
from mcpsync.testing import FakeServer, ToolContext
from mcpsync.transports.base import CloseHandler, MessageHandler, Transport

MODERN = "2026-07-28"
SUB_ID = "io.modelcontextprotocol/subscriptionId"

pytestmark = pytest.mark.timeout(30)


class Recording(Transport):
    """Wraps a transport; keeps what the client sent and what the server answered."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        def received(message: Any) -> None:
            self.received.append(message)
            on_message(message)

        self.inner.start(received, on_close)

    def send(self, message: Mapping[str, Any], deadline: Any = None) -> None:
        self.sent.append(dict(message))
        self.inner.send(message, deadline)

    def close(self) -> None:
        self.inner.close()

    def methods(self) -> list[str]:
        return [m["method"] for m in self.sent if "method" in m]

    def response_to(self, request: dict[str, Any]) -> dict[str, Any]:
        (found,) = [m for m in self.received if m.get("id") == request["id"] and "method" not in m]
        return found


def make_server(era: str = "dual", **kwargs: Any) -> FakeServer:
    server = FakeServer("fake", "1.0", instructions="be nice", era=era, **kwargs)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.resource("demo://note", name="note", mime_type="text/plain")
    def note() -> str:
        return "a note"

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello {name}"

    return server


def connect(server: FakeServer, **options: Any) -> tuple[mcpsync.Client, Recording]:
    options.setdefault("timeout", 10.0)
    transport = Recording(server.transport())
    return mcpsync.Client(transport, **options).connect(), transport


# --------------------------------------------------------------------------- eras


def test_dual_server_speaks_modern_to_auto_and_handshake_to_legacy() -> None:
    server = make_server()
    client, transport = connect(server)
    with client:
        assert (client.era, client.protocol_version) == ("modern", MODERN)
        assert (client.server_info.name, client.instructions) == ("fake", "be nice")
        assert client.call_tool("add", {"a": 2, "b": 3}).text == "5"
        assert [t.name for t in client.list_tools()] == ["add"]
        assert client.read_resource("demo://note").contents[0].text == "a note"  # type: ignore[union-attr]
        assert client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text == "Hello Ada"  # type: ignore[union-attr]
        client.ping()
    assert "initialize" not in transport.methods()
    (discover, *_) = [m for m in transport.sent if m.get("method") == "server/discover"]
    validate_against(MODERN, "DiscoverResultResponse", transport.response_to(discover))
    for request in transport.sent:
        name = {
            "tools/call": "CallToolResultResponse",
            "tools/list": "ListToolsResultResponse",
            "resources/read": "ReadResourceResultResponse",
            "prompts/get": "GetPromptResultResponse",
        }.get(request.get("method", ""))
        if name:
            validate_against(MODERN, name, transport.response_to(request))

    legacy, transport = connect(server, mode="legacy")
    with legacy:
        assert (legacy.era, legacy.protocol_version) == ("legacy", "2025-11-25")
        assert legacy.call_tool("add", {"a": 1, "b": 1}).text == "2"
    assert "resultType" not in transport.response_to(transport.sent[-1])["result"]


def test_modern_only_server_refuses_the_handshake() -> None:
    server = make_server("modern")
    client, _ = connect(server)
    with client:
        assert client.era == "modern"
    legacy = mcpsync.Client(server.transport(), mode="legacy", timeout=10.0)
    with pytest.raises(mcpsync.MethodNotFound):
        legacy.connect()
    legacy.close()


def test_legacy_only_server_costs_auto_one_probe() -> None:
    client, transport = connect(make_server("legacy"))
    with client:
        assert client.era == "legacy"
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
    assert transport.methods()[:3] == ["server/discover", "initialize", "notifications/initialized"]
    assert transport.methods().count("server/discover") == 1
    assert transport.response_to(transport.sent[0])["error"]["code"] == -32601


def test_unknown_modern_version_gets_32022_and_the_client_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_options, "MODERN_VERSIONS", ("2099-01-01", MODERN))
    client, transport = connect(make_server())
    with client:
        assert client.protocol_version == MODERN
    first, second = [m for m in transport.sent if m.get("method") == "server/discover"]
    error = transport.response_to(first)["error"]
    assert error["code"] == -32022 and error["data"] == {"supported": [MODERN], "requested": "2099-01-01"}
    validate_against(MODERN, "UnsupportedProtocolVersionError", transport.response_to(first))
    assert "result" in transport.response_to(second)


def test_era_is_checked() -> None:
    with pytest.raises(ValueError, match="era"):
        FakeServer("x", era="2026")


# --------------------------------------------------------------------------- MRTR


def test_sampling_elicitation_and_roots_become_input_rounds(tmp_path: Any) -> None:
    server = make_server()
    runs: list[int] = []

    @server.tool()
    def interview(ctx: ToolContext) -> str:
        runs.append(1)
        llm = ctx.sample("2+2?", max_tokens=5)
        who = ctx.elicit("name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        roots = ctx.list_roots()
        return f"{llm['content']['text']}/{who['content']['n']}/{roots[0]['uri']}/{ctx.protocol_version}"

    handler_threads: list[str] = []

    def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        handler_threads.append(threading.current_thread().name)
        return types.CreateMessageResult(types.TextContent("4"), model="m")

    def elicit(params: Any) -> types.ElicitResult:
        handler_threads.append(threading.current_thread().name)
        return types.ElicitResult(action="accept", content={"n": "ada"})

    client, transport = connect(server, sampling_handler=sampling, elicitation_handler=elicit, roots=[tmp_path])
    with client:
        result = client.call_tool("interview")
    assert result.text == f"4/ada/{tmp_path.resolve().as_uri()}/{MODERN}"
    calls = [m for m in transport.sent if m.get("method") == "tools/call"]
    # One question per round: three input_required answers, then the result; four runs of the tool.
    assert len(calls) == 4 and len(runs) == 4
    for call in calls[:3]:
        response = transport.response_to(call)
        assert response["result"]["resultType"] == "input_required"
        validate_against(MODERN, "InputRequiredResult", response["result"])
    assert "requestState" in calls[3]["params"] and "inputResponses" in calls[3]["params"]
    assert all(name.startswith("mcpsync-handler") for name in handler_threads)
    # No server-to-client request was ever sent.
    assert not [m for m in transport.received if "method" in m and "id" in m]


def test_capability_checks_use_the_request_meta() -> None:
    server = make_server()

    @server.tool()
    def needs_llm(ctx: ToolContext) -> str:
        return str(ctx.sample("hi")["model"])

    client, _ = connect(server)  # no sampling handler: no sampling capability
    with client:
        result = client.call_tool("needs_llm")
    assert result.is_error and "sampling" in result.text


def test_handler_failure_in_an_input_round(tmp_path: Any) -> None:
    server = make_server()

    @server.tool()
    def ask(ctx: ToolContext) -> str:
        return str(ctx.sample("x"))

    errors: list[BaseException] = []

    def sampling(params: Any) -> Any:
        raise ValueError("secret-ish detail")

    client, _ = connect(server, sampling_handler=sampling, exception_handler=errors.append)
    with client:
        with pytest.raises(mcpsync.McpError, match=r"sampling/createMessage handler failed \(ValueError\)") as info:
            client.call_tool("ask")
        assert "secret-ish" not in str(info.value)
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"
    assert len(errors) == 1 and isinstance(errors[0], ValueError)


def test_garbage_request_state_is_invalid_params() -> None:
    server = make_server()

    @server.tool()
    def ask(ctx: ToolContext) -> str:
        return str(ctx.list_roots())

    client, _ = connect(server, roots=[])
    with client:
        with pytest.raises(mcpsync.InvalidParams):
            client.request("tools/call", {"name": "ask", "arguments": {}, "requestState": "%%%"})


# --------------------------------------------------------------------------- logging


def test_logs_only_for_requests_that_name_a_level() -> None:
    server = make_server()

    @server.tool()
    def chatty(ctx: ToolContext) -> str:
        for level in ("debug", "warning", "error"):
            ctx.log(level, f"{level} text")
        return "ok"

    logs: list[types.LoggingMessageNotificationParams] = []
    got = threading.Event()

    def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)
        if params.level == "error":
            got.set()

    quiet, transport = connect(server)
    with quiet:
        quiet.call_tool("chatty")
        server.log("error", "broadcast")  # no request scope: never sent to a modern client
    assert not [m for m in transport.received if m.get("method") == "notifications/message"]

    client, _ = connect(server, logging_handler=on_log)
    with client:
        client.set_logging_level("warning")
        client.call_tool("chatty")
        assert got.wait(5)
    assert [p.level for p in logs] == ["warning", "error"]


# --------------------------------------------------------------------------- listen and cache


def test_listen_streams_carry_only_what_they_asked_for() -> None:
    server = make_server()
    client, transport = connect(server)
    with client:
        with client.listen(tools=True, resource_uris=["demo://note"]) as sub:
            assert sub.acknowledged == {"toolsListChanged": True, "resourceSubscriptions": ["demo://note"]}
            server.notify_prompts_changed()  # not asked for
            server.notify_resource_updated("demo://other")  # not asked for
            server.notify_tools_changed()
            server.notify_resource_updated("demo://note")
            first, second = sub.get(timeout=5), sub.get(timeout=5)
            assert first is not None and first.method == "notifications/tools/list_changed"
            assert first.params["_meta"][SUB_ID] == sub.id
            assert second is not None and second.uri == "demo://note"
        assert transport.sent[-1]["method"] == "notifications/cancelled"
        # A stream the server ends gracefully: iteration stops.
        sub = client.listen(prompts=True)
        server.end_subscriptions()
        assert list(sub) == [] and sub.closed
        final = transport.received[-1]
        validate_against(MODERN, "SubscriptionsListenResultResponse", final)
    for message in transport.received:
        if message.get("method") == "notifications/subscriptions/acknowledged":
            validate_against(MODERN, "SubscriptionsAcknowledgedNotification", message)


def test_on_and_subscribe_resource_ride_listen(recorder: Any) -> None:
    server = make_server()
    changed, updated = recorder(), recorder()
    client, transport = connect(server)
    with client:
        client.on("notifications/tools/list_changed", changed)
        client.on("notifications/resources/updated", updated)
        client.subscribe_resource("demo://note")
        server.notify_tools_changed()
        server.notify_resource_updated("demo://note")
        changed.wait(1)
        assert [p["uri"] for p in updated.wait(1)] == ["demo://note"]
    assert "resources/subscribe" not in transport.methods()


def test_cache_ttl_is_honoured_and_list_changed_invalidates(recorder: Any) -> None:
    server = make_server(cache_ttl_ms=600_000)
    client, transport = connect(server)
    with client:
        changed = recorder()
        client.on("notifications/tools/list_changed", changed)
        client.list_tools()
        client.list_tools()
        assert transport.methods().count("tools/list") == 1

        @server.tool()
        def later() -> str:
            return "new"

        server.notify_tools_changed()
        changed.wait(1)
        assert [t.name for t in client.list_tools()] == ["add", "later"]
        assert transport.methods().count("tools/list") == 2
        assert transport.response_to(transport.sent[-1])["result"]["ttlMs"] == 600_000


def test_legacy_clients_of_a_dual_server_still_get_plain_notifications(recorder: Any) -> None:
    server = make_server()
    changed = recorder()
    client, transport = connect(server, mode="legacy")
    with client:
        client.on("notifications/tools/list_changed", changed)
        server.notify_tools_changed()
        (params,) = changed.wait(1)
        assert SUB_ID not in (params.get("_meta") or {})
    assert "subscriptions/listen" not in transport.methods()
