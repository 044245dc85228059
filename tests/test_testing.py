"""mcpsync.testing.FakeServer: the server engine over raw JSON-RPC, then through mcpsync.Client."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import textwrap
import threading
from typing import Any, Literal, Optional

import pytest

import mcpsync
from mcpsync import types
from mcpsync.testing import ClientRequestError, FakeServer, RpcError, ToolContext, ToolFailure

pytestmark = pytest.mark.timeout(30)

LATEST = "2025-11-25"


class Raw:
    """A hand-driven JSON-RPC client over ``FakeServer.transport()``: sees every wire message."""

    def __init__(self, server: FakeServer) -> None:
        self.transport = server.transport()
        self.cond = threading.Condition()
        self.responses: dict[Any, dict[str, Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.requests: queue.Queue[dict[str, Any]] = queue.Queue()
        self.closed = threading.Event()
        self._ids = iter(range(1, 1_000_000))
        self.transport.start(self._on_message, lambda exc: self.closed.set())

    def _on_message(self, message: dict[str, Any]) -> None:
        with self.cond:
            if "method" in message and "id" in message:
                self.requests.put(message)
            elif "method" in message:
                self.notifications.append(message)
            else:
                self.responses[message.get("id")] = message
            self.cond.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        self.transport.send(message)

    def start_call(self, method: str, params: dict[str, Any] | None = None) -> int:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return request_id

    def response(self, request_id: Any, timeout: float = 5.0) -> dict[str, Any]:
        with self.cond:
            assert self.cond.wait_for(lambda: request_id in self.responses, timeout), (
                f"no response to {request_id}"
            )
            return self.responses.pop(request_id)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.response(self.start_call(method, params))

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.call(method, params)
        assert "error" in reply, reply
        return reply["error"]

    def wait_notification(self, method: str, timeout: float = 5.0) -> dict[str, Any]:
        with self.cond:
            ok = self.cond.wait_for(
                lambda: any(n["method"] == method for n in self.notifications), timeout
            )
            assert ok, f"no {method}"
            found = next(n for n in self.notifications if n["method"] == method)
            self.notifications.remove(found)
            return found

    def initialize(
        self, version: str = LATEST, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        result = self.result(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def close(self) -> None:
        self.transport.close()


@pytest.fixture
def server() -> FakeServer:
    srv = FakeServer("fake", "1.2.3", instructions="be nice")

    @srv.tool()
    def add(a: int, b: int) -> int:
        """Add two integers.

        More text that is not part of the description.
        """
        return a + b

    @srv.tool()
    def echo(text: str) -> str:
        return text

    @srv.resource("test://hello", description="greeting")
    def hello() -> str:
        return "hello world"

    @srv.resource("test://bytes", mime_type="application/octet-stream")
    def blob() -> bytes:
        return b"\x00\x01\xff"

    @srv.resource_template("test://users/{user}/files/{+path}")
    def user_file(user: str, path: str) -> str:
        return f"{user}:{path}"

    @srv.prompt()
    def greet(name: str, style: str = "friendly") -> str:
        """Greet someone."""
        return f"{style} hello to {name}"

    @srv.prompt(name="chat")
    def chat_prompt(topic: str) -> list[Any]:
        return [
            "first",
            ("assistant", f"about {topic}"),
            {"role": "user", "content": "plain"},
            {"role": "user", "content": {"type": "text", "text": "block"}},
        ]

    return srv


@pytest.fixture
def raw(server: FakeServer) -> Any:
    client = Raw(server)
    client.initialize()
    yield client
    client.close()


# -- lifecycle ------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_accepts_every_handshake_version(server: FakeServer, version: str) -> None:
    client = Raw(server)
    try:
        result = client.initialize(version)
        assert result["protocolVersion"] == version
        assert result["serverInfo"] == {"name": "fake", "version": "1.2.3"}
        assert result["instructions"] == "be nice"
        caps = result["capabilities"]
        assert caps["tools"] == {"listChanged": True}
        assert caps["resources"] == {"subscribe": True, "listChanged": True}
        assert ("completions" in caps) == (version != "2024-11-05")
    finally:
        client.close()


def test_initialize_offers_the_latest_version_for_an_unknown_one(server: FakeServer) -> None:
    client = Raw(server)
    try:
        assert client.initialize("1999-01-01")["protocolVersion"] == LATEST
    finally:
        client.close()


def test_capabilities_can_be_overridden() -> None:
    client = Raw(FakeServer("bare", capabilities={"tools": {}}))
    try:
        assert client.initialize()["capabilities"] == {"tools": {}}
    finally:
        client.close()


def test_requests_before_initialize(server: FakeServer) -> None:
    client = Raw(server)
    try:
        assert client.result("ping") == {}
        assert client.error("tools/list")["code"] == -32600
        assert client.error("server/discover")["code"] == -32601  # a dual-era client's probe
        assert client.error("initialize", {"capabilities": {}})["code"] == -32602
        client.initialize()
        assert client.error("initialize", {"protocolVersion": LATEST})["code"] == -32600
    finally:
        client.close()


def test_malformed_messages_get_json_rpc_errors(raw: Raw) -> None:
    raw.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])  # type: ignore[arg-type]
    assert raw.response(None)["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "id": True, "method": "ping"})
    assert raw.response(None)["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1]})
    assert raw.response(7)["error"]["code"] == -32602
    raw.send({"jsonrpc": "1.0", "id": 8, "method": "ping"})
    assert raw.response(8)["error"]["code"] == -32600
    assert raw.error("no/such/method")["code"] == -32601
    assert raw.result("ping") == {}  # the connection survived all of it


# -- tools --------------------------------------------------------------------


def test_input_schema_from_type_hints() -> None:
    srv = FakeServer("schemas")

    @srv.tool(description="explicit")
    def typed(
        i: int,
        f: float,
        s: str,
        b: bool,
        items: list[int],
        mapping: dict[str, float],
        maybe: Optional[str],
        mode: Literal["a", "b"],
        ctx: ToolContext,
        anything=None,  # type: ignore[no-untyped-def]
        limit: int = 10,
        tags: tuple[str, ...] = (),
    ) -> str:
        return ""

    client = Raw(srv)
    try:
        client.initialize()
        (tool,) = client.result("tools/list")["tools"]
    finally:
        client.close()
    assert tool["name"] == "typed" and tool["description"] == "explicit"
    schema = tool["inputSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["i", "f", "s", "b", "items", "mapping", "maybe", "mode"]
    props = schema["properties"]
    assert "ctx" not in props
    assert props["i"] == {"type": "integer"}
    assert props["f"] == {"type": "number"}
    assert props["s"] == {"type": "string"}
    assert props["b"] == {"type": "boolean"}
    assert props["items"] == {"type": "array", "items": {"type": "integer"}}
    assert props["mapping"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["maybe"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert props["mode"] == {"enum": ["a", "b"], "type": "string"}
    assert props["anything"] == {"default": None}
    assert props["limit"] == {"type": "integer", "default": 10}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "default": []}


def test_tool_list_uses_docstring_first_paragraph(raw: Raw) -> None:
    tools = {t["name"]: t for t in raw.result("tools/list")["tools"]}
    assert tools["add"]["description"] == "Add two integers."
    assert "description" not in tools["echo"]


def call(
    raw: Raw, name: str, arguments: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return raw.result("tools/call", {"name": name, "arguments": arguments or {}, **extra})


def test_tool_results_are_converted() -> None:
    srv = FakeServer("results")
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}

    @srv.tool()
    def number() -> int:
        return 3

    @srv.tool()
    def nothing() -> None:
        return None

    @srv.tool()
    def data() -> dict[str, Any]:
        return {"k": [1, 2]}

    @srv.tool(output_schema={"type": "object", "properties": {"k": {"type": "integer"}}})
    def structured() -> dict[str, Any]:
        return {"k": 1}

    @srv.tool(output_schema={"type": "object", "properties": {"result": {"type": "array"}}})
    def structured_list() -> list[int]:
        return [1, 2]

    @srv.tool()
    def picture() -> dict[str, Any]:
        return image

    @srv.tool()
    def blocks() -> list[Any]:
        return [types.TextContent(text="attrs block"), image]

    @srv.tool()
    def flag() -> bool:
        return True

    client = Raw(srv)
    try:
        client.initialize()
        assert call(client, "number") == {"content": [{"type": "text", "text": "3"}]}
        assert call(client, "nothing") == {"content": []}
        assert call(client, "flag")["content"][0]["text"] == "true"
        assert json.loads(call(client, "data")["content"][0]["text"]) == {"k": [1, 2]}
        result = call(client, "structured")
        assert result["structuredContent"] == {"k": 1}
        assert json.loads(result["content"][0]["text"]) == {"k": 1}
        assert call(client, "structured_list")["structuredContent"] == {"result": [1, 2]}
        assert call(client, "picture")["content"] == [image]
        content = call(client, "blocks")["content"]
        assert content[0]["type"] == "text" and content[0]["text"] == "attrs block"
        assert content[1] == image
    finally:
        client.close()


def test_tool_errors() -> None:
    srv = FakeServer("errors")

    @srv.tool()
    def fails() -> str:
        raise ToolFailure("nope, said the tool")

    @srv.tool()
    def crashes() -> str:
        raise ValueError("bug")

    @srv.tool()
    def protocol_error() -> str:
        raise RpcError(-32099, "custom", {"why": "test"})

    @srv.tool()
    def typed(n: int, flag: bool = False) -> str:
        return "ok"

    client = Raw(srv)
    try:
        client.initialize()
        assert call(client, "fails") == {
            "content": [{"type": "text", "text": "nope, said the tool"}],
            "isError": True,
        }
        result = call(client, "crashes")
        assert result["isError"] is True and "ValueError: bug" in result["content"][0]["text"]
        assert client.error("tools/call", {"name": "protocol_error"}) == {
            "code": -32099,
            "message": "custom",
            "data": {"why": "test"},
        }
        assert client.error("tools/call", {"name": "missing"})["code"] == -32602
        assert client.error("tools/call", {"name": 5})["code"] == -32602
        for bad in (
            {},
            {"n": "1"},
            {"n": 1.5},
            {"n": True},
            {"n": 1, "flag": 0},
            {"n": 1, "extra": 2},
        ):
            result = call(client, "typed", bad)
            assert result["isError"] is True, bad
        assert (
            call(client, "typed", {"n": 2.0})["content"][0]["text"] == "ok"
        )  # 2.0 is an integer in JSON Schema
    finally:
        client.close()


def test_an_answer_json_cannot_carry_becomes_an_internal_error() -> None:
    """A result or an error whose data JSON cannot carry is answered with -32603, never left
    unanswered (the client would wait until its timeout)."""
    srv = FakeServer("unencodable")

    @srv.tool()
    def odd_error() -> str:
        raise RpcError(-32000, "odd", {"when": object()})

    @srv.resource("test://odd")
    def odd_resource() -> dict[str, Any]:
        return {"text": "x", "_meta": {"when": object()}}

    client = Raw(srv)
    try:
        client.initialize()
        error = client.error("tools/call", {"name": "odd_error"})
        assert error["code"] == -32603 and "not valid JSON" in error["message"]
        assert client.error("resources/read", {"uri": "test://odd"})["code"] == -32603
        assert client.result("ping") == {}
    finally:
        client.close()


def test_each_tool_call_runs_on_its_own_thread() -> None:
    srv = FakeServer("threads")
    second_started = threading.Event()
    names: list[str] = []

    @srv.tool()
    def first() -> str:
        names.append(threading.current_thread().name)
        # Blocks until the second call runs: only possible if calls are concurrent.
        return "first" if second_started.wait(5) else "serialised"

    @srv.tool()
    def second() -> str:
        names.append(threading.current_thread().name)
        second_started.set()
        return "second"

    client = Raw(srv)
    try:
        client.initialize()
        first_id = client.start_call("tools/call", {"name": "first", "arguments": {}})
        second_id = client.start_call("tools/call", {"name": "second", "arguments": {}})
        assert client.response(second_id)["result"]["content"][0]["text"] == "second"
        assert client.response(first_id)["result"]["content"][0]["text"] == "first"
        assert len(set(names)) == 2 and all(n.startswith("mcpsync-fakeserver-tool-") for n in names)
    finally:
        client.close()


def test_progress_and_logging() -> None:
    srv = FakeServer("progress")

    @srv.tool()
    def work(ctx: ToolContext) -> str:
        ctx.report_progress(1, 2, "half")
        ctx.report_progress(2)
        ctx.log("info", "chatty")
        ctx.log("error", {"bad": True}, logger="work")
        return "done"

    client = Raw(srv)
    try:
        client.initialize()
        call(client, "work", _meta={"progressToken": "tok"})
        first = client.wait_notification("notifications/progress")["params"]
        second = client.wait_notification("notifications/progress")["params"]
        assert first == {"progressToken": "tok", "progress": 1, "total": 2, "message": "half"}
        assert second == {"progressToken": "tok", "progress": 2}
        assert client.wait_notification("notifications/message")["params"] == {
            "level": "info",
            "data": "chatty",
        }
        client.wait_notification("notifications/message")
        # Without a token no progress is sent; after setLevel only severe enough logs are.
        assert client.error("logging/setLevel", {"level": "loud"})["code"] == -32602
        assert client.result("logging/setLevel", {"level": "warning"}) == {}
        call(client, "work")
        error_log = client.wait_notification("notifications/message")["params"]
        assert error_log == {"level": "error", "data": {"bad": True}, "logger": "work"}
        with client.cond:
            assert client.notifications == []
    finally:
        client.close()


def test_progress_message_is_omitted_for_2024_11_05() -> None:
    srv = FakeServer("old")

    @srv.tool()
    def work(ctx: ToolContext) -> str:
        ctx.report_progress(1, 1, "msg")
        return ""

    client = Raw(srv)
    try:
        client.initialize("2024-11-05")
        call(client, "work", _meta={"progressToken": 5})
        assert client.wait_notification("notifications/progress")["params"] == {
            "progressToken": 5,
            "progress": 1,
            "total": 1,
        }
    finally:
        client.close()


def test_cancelled_tool_sees_the_event_and_gets_no_response() -> None:
    srv = FakeServer("cancel")
    started, saw_cancel = threading.Event(), threading.Event()

    @srv.tool()
    def wait(ctx: ToolContext) -> str:
        started.set()
        if ctx.cancelled.wait(10):
            saw_cancel.set()
        return "finished"

    client = Raw(srv)
    try:
        client.initialize()
        request_id = client.start_call("tools/call", {"name": "wait", "arguments": {}})
        assert started.wait(5)
        client.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id, "reason": "user"},
            }
        )
        assert saw_cancel.wait(5)
        assert client.result("ping") == {}
        with client.cond:
            assert request_id not in client.responses
    finally:
        client.close()


def test_list_changed_notifications_reach_every_client(server: FakeServer) -> None:
    clients = [Raw(server), Raw(server)]
    try:
        for c in clients:
            c.initialize()
        assert len(server.connections) == 2
        server.notify_tools_changed()
        server.notify_resources_changed()
        server.notify_prompts_changed()
        server.log("notice", "to all")
        for c in clients:
            c.wait_notification("notifications/tools/list_changed")
            c.wait_notification("notifications/resources/list_changed")
            c.wait_notification("notifications/prompts/list_changed")
            assert c.wait_notification("notifications/message")["params"]["data"] == "to all"
    finally:
        for c in clients:
            c.close()
    assert server.connections == []


def test_tools_can_be_added_and_removed_while_connected(server: FakeServer, raw: Raw) -> None:
    @server.tool
    def late() -> str:
        return "late"

    assert "late" in {t["name"] for t in raw.result("tools/list")["tools"]}
    server.remove_tool("late")
    assert "late" not in {t["name"] for t in raw.result("tools/list")["tools"]}


# -- server→client requests ----------------------------------------------------


def answer_next_request(raw: Raw, method: str, reply: dict[str, Any]) -> dict[str, Any]:
    request = raw.requests.get(timeout=5)
    assert request["method"] == method
    raw.send({"jsonrpc": "2.0", "id": request["id"], **reply})
    return request


def test_sampling_elicitation_and_roots_from_a_tool() -> None:
    srv = FakeServer("s2c")

    @srv.tool()
    def ask(ctx: ToolContext) -> str:
        sampled = ctx.sample("What is 2+2?", max_tokens=10, system_prompt="be brief")
        elicited = ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        roots = ctx.list_roots()
        return f"{sampled['content']['text']}|{elicited['content']['name']}|{roots[0]['uri']}"

    client = Raw(srv)
    try:
        client.initialize(capabilities={"sampling": {}, "elicitation": {}, "roots": {}})
        request_id = client.start_call("tools/call", {"name": "ask", "arguments": {}})
        sampling = answer_next_request(
            client,
            "sampling/createMessage",
            {
                "result": {
                    "role": "assistant",
                    "content": {"type": "text", "text": "4"},
                    "model": "m",
                }
            },
        )
        assert sampling["params"] == {
            "messages": [{"role": "user", "content": {"type": "text", "text": "What is 2+2?"}}],
            "maxTokens": 10,
            "systemPrompt": "be brief",
        }
        elicit = answer_next_request(
            client,
            "elicitation/create",
            {"result": {"action": "accept", "content": {"name": "Ada"}}},
        )
        assert elicit["params"]["message"] == "Your name?"
        answer_next_request(client, "roots/list", {"result": {"roots": [{"uri": "file:///tmp"}]}})
        assert client.response(request_id)["result"]["content"][0]["text"] == "4|Ada|file:///tmp"
    finally:
        client.close()


def test_server_to_client_request_failures_become_tool_errors() -> None:
    srv = FakeServer("s2c-errors")

    @srv.tool()
    def ask(ctx: ToolContext) -> str:
        return str(ctx.sample("hi"))

    @srv.tool()
    def impatient(ctx: ToolContext) -> str:
        return str(ctx.request("roots/list", timeout=0.2))

    client = Raw(srv)
    try:
        client.initialize(capabilities={"sampling": {}})
        request_id = client.start_call("tools/call", {"name": "ask", "arguments": {}})
        answer_next_request(
            client, "sampling/createMessage", {"error": {"code": -1, "message": "user said no"}}
        )
        result = client.response(request_id)["result"]
        assert result["isError"] is True and "user said no" in result["content"][0]["text"]
        # Timeout: the server cancels its own request and the tool fails.
        request_id = client.start_call("tools/call", {"name": "impatient", "arguments": {}})
        unanswered = client.requests.get(timeout=5)
        cancel = client.wait_notification("notifications/cancelled")
        assert cancel["params"]["requestId"] == unanswered["id"]
        result = client.response(request_id)["result"]
        assert result["isError"] is True and "RequestTimeout" in result["content"][0]["text"]
    finally:
        client.close()


def test_undeclared_client_capability_is_a_tool_error(raw: Raw, server: FakeServer) -> None:
    @server.tool()
    def roots(ctx: ToolContext) -> str:
        return str(ctx.list_roots())

    result = call(raw, "roots")
    assert result["isError"] is True and "'roots' capability" in result["content"][0]["text"]
    assert raw.requests.empty()


def test_disconnect_wakes_tools_waiting_on_the_client() -> None:
    srv = FakeServer("disconnect")
    outcome: queue.Queue[str] = queue.Queue()

    @srv.tool()
    def ask(ctx: ToolContext) -> str:
        try:
            ctx.sample("hi", timeout=None)
        except mcpsync.ConnectionClosed:
            outcome.put("closed")
        return ""

    client = Raw(srv)
    client.initialize(capabilities={"sampling": {}})
    client.start_call("tools/call", {"name": "ask", "arguments": {}})
    client.requests.get(timeout=5)
    client.close()  # joins the server side, which joins the tool thread
    assert outcome.get_nowait() == "closed"
    assert not [t for t in threading.enumerate() if t.name.startswith("mcpsync-fakeserver-tool-")]


def test_client_request_error_is_exported() -> None:
    assert issubclass(ClientRequestError, RpcError)


# -- resources, prompts, completion, pagination -----------------------------------


def test_resources(raw: Raw) -> None:
    listed = raw.result("resources/list")["resources"]
    assert {
        "uri": "test://hello",
        "name": "hello",
        "mimeType": "text/plain",
        "description": "greeting",
    } in listed
    templates = raw.result("resources/templates/list")["resourceTemplates"]
    assert templates[0]["uriTemplate"] == "test://users/{user}/files/{+path}"
    assert raw.result("resources/read", {"uri": "test://hello"})["contents"] == [
        {"uri": "test://hello", "text": "hello world", "mimeType": "text/plain"}
    ]
    (blob,) = raw.result("resources/read", {"uri": "test://bytes"})["contents"]
    assert blob == {"uri": "test://bytes", "blob": "AAH/", "mimeType": "application/octet-stream"}
    (item,) = raw.result("resources/read", {"uri": "test://users/ada/files/a/b.txt"})["contents"]
    assert item["text"] == "ada:a/b.txt"
    error = raw.error("resources/read", {"uri": "test://missing"})
    assert error["code"] == -32002 and error["data"] == {"uri": "test://missing"}
    assert (
        raw.error("resources/read", {"uri": "test://users/ada"})["code"] == -32002
    )  # template needs both parts
    assert raw.error("resources/read", {})["code"] == -32602


def test_subscriptions(server: FakeServer, raw: Raw) -> None:
    assert raw.result("resources/subscribe", {"uri": "test://hello"}) == {}
    assert raw.result("resources/subscribe", {"uri": "test://bytes"}) == {}
    server.notify_resource_updated("test://hello")
    assert raw.wait_notification("notifications/resources/updated")["params"] == {
        "uri": "test://hello"
    }
    assert raw.result("resources/unsubscribe", {"uri": "test://hello"}) == {}
    server.notify_resource_updated("test://hello")
    server.notify_resource_updated(
        "test://bytes"
    )  # sent after: its arrival proves the first was not sent
    assert raw.wait_notification("notifications/resources/updated")["params"] == {
        "uri": "test://bytes"
    }
    with raw.cond:
        assert raw.notifications == []


def test_prompts(raw: Raw) -> None:
    prompts = {p["name"]: p for p in raw.result("prompts/list")["prompts"]}
    assert prompts["greet"] == {
        "name": "greet",
        "description": "Greet someone.",
        "arguments": [{"name": "name", "required": True}, {"name": "style", "required": False}],
    }
    got = raw.result("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}})
    assert got == {
        "description": "Greet someone.",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "friendly hello to Ada"}}
        ],
    }
    chat = raw.result("prompts/get", {"name": "chat", "arguments": {"topic": "x"}})["messages"]
    assert [(m["role"], m["content"]["text"]) for m in chat] == [
        ("user", "first"),
        ("assistant", "about x"),
        ("user", "plain"),
        ("user", "block"),
    ]
    assert raw.error("prompts/get", {"name": "greet"})["code"] == -32602
    assert (
        raw.error("prompts/get", {"name": "greet", "arguments": {"name": "a", "x": "y"}})["code"]
        == -32602
    )
    assert raw.error("prompts/get", {"name": "nope"})["code"] == -32602


def test_completion(server: FakeServer, raw: Raw) -> None:
    ref = {"type": "ref/prompt", "name": "greet"}
    argument = {"name": "style", "value": "f"}
    assert raw.result("completion/complete", {"ref": ref, "argument": argument}) == {
        "completion": {"values": [], "total": 0, "hasMore": False}
    }
    seen: list[Any] = []

    @server.completion
    def complete(
        ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None
    ) -> list[str]:
        seen.append((ref, argument, context))
        return [f"v{i}" for i in range(150)]

    result = raw.result(
        "completion/complete",
        {"ref": ref, "argument": argument, "context": {"arguments": {"name": "Ada"}}},
    )
    assert seen == [(ref, argument, {"arguments": {"name": "Ada"}})]
    assert len(result["completion"]["values"]) == 100
    assert result["completion"]["total"] == 150 and result["completion"]["hasMore"] is True
    assert raw.error("completion/complete", {"ref": ref})["code"] == -32602


@pytest.mark.parametrize(
    "method, key",
    [
        ("tools/list", "tools"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("prompts/list", "prompts"),
    ],
)
def test_pagination(method: str, key: str) -> None:
    srv = FakeServer("pages", page_size=2)
    for i in range(5):
        srv.tool(name=f"t{i}")(lambda: "")
        srv.resource(f"r://{i}", name=f"r{i}")(lambda: "")
        srv.resource_template(f"t://{i}/{{x}}", name=f"t{i}")(lambda x: "")
        srv.prompt(name=f"p{i}")(lambda: "")
    client = Raw(srv)
    try:
        client.initialize()
        pages, params = [], {}
        while True:
            page = client.result(method, params)
            pages.append(page[key])
            if "nextCursor" not in page:
                break
            params = {"cursor": page["nextCursor"]}
        assert [len(p) for p in pages] == [2, 2, 1]
        assert len({json.dumps(item, sort_keys=True) for p in pages for item in p}) == 5
        assert client.error(method, {"cursor": "garbage!"})["code"] == -32602
        other = "prompts/list" if method != "prompts/list" else "tools/list"
        foreign = client.result(other)["nextCursor"]  # a cursor of another list is rejected
        assert client.error(method, {"cursor": foreign})["code"] == -32602
    finally:
        client.close()


# -- stdio ----------------------------------------------------------------------


STDIO_SERVER = textwrap.dedent("""
    from mcpsync.testing import FakeServer
    server = FakeServer("stdio-fake")

    @server.tool()
    def noisy(text: str) -> str:
        print("stray output that must not reach the protocol stream")
        return text.upper()

    server.run_stdio()
""")


def test_run_stdio_serves_until_eof() -> None:
    lines = [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": LATEST,
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
        ),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "this is not json",
        '{"jsonrpc": "2.0", "id": [1], "result": {}}',
        '{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {}}}',
        "[" * 100_000,
        "",
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "noisy", "arguments": {"text": "hi"}},
            }
        ),
    ]
    proc = subprocess.run(
        [sys.executable, "-c", STDIO_SERVER],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode == 0, proc.stderr
    replies = [
        json.loads(line) for line in proc.stdout.splitlines()
    ]  # every stdout line is JSON-RPC
    by_id = {r.get("id"): r for r in replies}
    assert by_id[1]["result"]["serverInfo"]["name"] == "stdio-fake"
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[2]["result"]["content"][0]["text"] == "HI"
    assert "stray output" in proc.stderr


# -- through mcpsync.Client --------------------------------------------------------


def test_client_round_trip(server: FakeServer) -> None:
    with server.client(timeout=10) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
        assert client.server_info.name == "fake" and client.server_info.version == "1.2.3"
        assert client.protocol_version == "2026-07-28"  # FakeServer is dual-era by default
        assert client.instructions == "be nice"
        assert {t.name for t in client.list_tools()} == {"add", "echo"}
        contents = client.read_resource("test://hello").contents
        assert (
            isinstance(contents[0], types.TextResourceContents)
            and contents[0].text == "hello world"
        )
        prompt = client.get_prompt("greet", {"name": "Ada"})
        assert isinstance(prompt.messages[0].content, types.TextContent)
        assert prompt.messages[0].content.text == "friendly hello to Ada"
        client.ping()
        with pytest.raises(mcpsync.ResourceNotFound):
            client.read_resource("test://missing")
        with pytest.raises(mcpsync.InvalidParams):
            client.call_tool("missing")


def test_client_sees_tool_errors_as_data() -> None:
    srv = FakeServer("errs")

    @srv.tool()
    def fails() -> str:
        raise ToolFailure("broken on purpose")

    with srv.client(timeout=10) as client:
        result = client.call_tool("fails")
        assert result.is_error
        with pytest.raises(mcpsync.ToolError):
            result.raise_for_error()


def test_client_pagination_progress_and_structured_output() -> None:
    srv = FakeServer("paged", page_size=1)
    for i in range(3):
        srv.prompt(name=f"p{i}")(lambda: "")

    @srv.tool(
        output_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        }
    )
    def count(ctx: ToolContext, n: int) -> dict[str, int]:
        for i in range(n):
            ctx.report_progress(i + 1, n)
        return {"n": n}

    seen: list[float] = []
    done = threading.Event()

    def progress(p: float, total: float | None, message: str | None) -> None:
        seen.append(p)
        if p == total:
            done.set()

    with srv.client(timeout=10) as client:
        assert [p.name for p in client.list_prompts()] == ["p0", "p1", "p2"]
        result = client.call_tool("count", {"n": 3}, progress=progress)
        assert result.structured_content == {"n": 3}
        assert done.wait(5)
        assert seen == [1, 2, 3]


def test_client_handlers_serve_server_requests() -> None:
    srv = FakeServer("handlers")

    @srv.tool()
    def ask(ctx: ToolContext) -> str:
        sampled = ctx.sample("question")
        elicited = ctx.elicit(
            "name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        roots = ctx.list_roots()
        ctx.log("warning", "careful")
        return f"{sampled['content']['text']}/{elicited['action']}/{len(roots)}"

    logs: queue.Queue[Any] = queue.Queue()

    def sampling(params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="answer"), model="fake"
        )

    def elicitation(params: Any) -> Any:
        return types.ElicitResult(action="decline")

    with srv.client(
        timeout=10,
        sampling_handler=sampling,
        elicitation_handler=elicitation,
        roots=[("file:///a", "a"), ("file:///b", "b")],
        logging_handler=logs.put,
    ) as client:
        assert client.call_tool("ask").text == "answer/decline/2"
        assert logs.get(timeout=5).data == "careful"


def test_client_notifications_and_subscriptions(server: FakeServer) -> None:
    events: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
    with server.client(timeout=10) as client:
        client.on("notifications/tools/list_changed", lambda p: events.put(("tools", p)))
        client.on("notifications/resources/updated", lambda p: events.put(("updated", p)))
        client.subscribe_resource("test://hello")
        server.notify_tools_changed()
        server.notify_resource_updated("test://hello")
        got = dict(events.get(timeout=5) for _ in range(2))
        assert got["updated"]["uri"] == "test://hello"
        client.set_logging_level("error")
        completion = client.complete(types.PromptReference(name="greet"), "style", "")
        assert completion.values == []


def test_closing_the_client_stops_the_server_side(server: FakeServer) -> None:
    client = server.client(timeout=10)
    client.call_tool("echo", {"text": "x"})
    assert len(server.connections) == 1
    client.close()
    assert server.connections == []
    assert not [
        t
        for t in threading.enumerate()
        if t.name.startswith(("mcpsync-memory-", "mcpsync-fakeserver-"))
    ]


def test_an_unused_client_starts_nothing(server: FakeServer) -> None:
    before = threading.active_count()
    client = server.client()
    assert threading.active_count() == before
    client.close()


def test_disconnect_sets_cancelled_for_running_tools() -> None:
    srv = FakeServer("disconnect-cancel")
    started, woke = threading.Event(), threading.Event()

    @srv.tool()
    def wait(ctx: ToolContext) -> str:
        started.set()
        if ctx.cancelled.wait(20):
            woke.set()
        return ""

    client = Raw(srv)
    client.initialize()
    client.start_call("tools/call", {"name": "wait", "arguments": {}})
    assert started.wait(5)
    client.close()
    assert (
        woke.is_set()
    )  # close() returned only after the tool thread saw the cancellation and ended


def test_garbage_from_the_client_never_breaks_the_connection(raw: Raw) -> None:
    garbage: list[Any] = [
        {"jsonrpc": "2.0", "id": [1], "result": {}},
        {"jsonrpc": "2.0", "id": {"a": 1}, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": 99999, "result": {}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "nope"},
        {"jsonrpc": "2.0", "method": 5, "id": "bad"},
        {"jsonrpc": "2.0"},
        "just a string",
        None,
        12,
    ]
    for message in garbage:
        raw.send(message)
    assert raw.result("ping") == {}
    assert call(raw, "add", {"a": 2, "b": 2})["content"][0]["text"] == "4"


def test_disconnect_all_fails_pending_client_calls() -> None:
    srv = FakeServer("crashy")
    started = threading.Event()

    @srv.tool()
    def hang(ctx: ToolContext) -> str:
        started.set()
        ctx.cancelled.wait(20)
        return ""

    outcome: queue.Queue[BaseException | None] = queue.Queue()
    with srv.client(timeout=20) as client:

        def call_it() -> None:
            try:
                client.call_tool("hang")
            except BaseException as exc:
                outcome.put(exc)
            else:
                outcome.put(None)

        caller = threading.Thread(target=call_it)
        caller.start()
        assert started.wait(5)
        srv.disconnect_all()
        caller.join(10)
        assert isinstance(outcome.get(timeout=1), mcpsync.ConnectionClosed)
    assert srv.connections == []
