"""Every client feature over the WebSocket transport, against a real MCP server.

The server is the official-SDK test server (``tests/servers/sdk_server.py``) behind
``tests/servers/ws_bridge.py``, which serves it as a WebSocket MCP server on 127.0.0.1 (one
backend process per WebSocket connection, one JSON-RPC message per text frame, ``mcp``
subprotocol). The client runs in the handshake era, the one in which the server sends requests
(sampling, elicitation, roots) to the client over the same socket.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sdk_catalog
from ws_harness import Bridge

import mcpsync
from mcpsync import types
from mcpsync.transports.websocket.transport import WebSocketTransport

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def bridge() -> Iterator[Bridge]:
    server = Bridge()
    yield server
    server.stop()


class Seen:
    """What the handlers of :func:`full` received, with the threads they ran on."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.calls: dict[str, list[Any]] = {}
        self.threads: list[str] = []

    def add(self, kind: str, value: Any) -> None:
        with self.lock:
            self.calls.setdefault(kind, []).append(value)
            self.threads.append(threading.current_thread().name)
            self.lock.notify_all()

    def wait(self, kind: str, count: int = 1, timeout: float = 10.0) -> list[Any]:
        with self.lock:
            if not self.lock.wait_for(lambda: len(self.calls.get(kind, [])) >= count, timeout):
                pytest.fail(f"expected {count} {kind} calls, got {self.calls.get(kind)!r}")
            return list(self.calls[kind])


@pytest.fixture(scope="module")
def seen() -> Seen:
    return Seen()


@pytest.fixture(scope="module")
def full(bridge: Bridge, seen: Seen) -> Iterator[mcpsync.Client]:
    """One client with every handler, over one WebSocket connection, shared by the module."""

    def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        seen.add("sampling", params)
        prompt = params.messages[0].content
        assert isinstance(prompt, types.TextContent)
        return types.CreateMessageResult(
            content=types.TextContent(text=f"echo: {prompt.text}"), model="ws-model", stop_reason="endTurn"
        )

    def elicit(params: Any) -> types.ElicitResult:
        seen.add("elicitation", params)
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"name": "Ada", "age": 36})

    client = mcpsync.Client.websocket(
        bridge.url(),
        mode="legacy",
        timeout=20.0,
        roots=[types.Root(uri="file:///srv/a", name="a"), ("file:///srv/b", "b")],
        sampling_handler=sampling,
        elicitation_handler=elicit,
        logging_handler=lambda params: seen.add("log", params),
    )
    with client:
        # Callback threads start on first use; start them here, so that the per-test leak
        # check does not count them against whichever test happens to use them first.
        client.call_tool("slow", {"steps": 1, "delay": 0}, progress=lambda *args: None)
        client.call_tool("sample", {"prompt": "warm-up"})
        yield client


def stats(client: mcpsync.Client) -> dict[str, Any]:
    result = client.call_tool("stats")
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def _handler_thread(name: str) -> bool:
    return name.startswith("mcpsync-") and "ws-reader" not in name


# --------------------------------------------------------------------------- handshake


def test_handshake_over_websocket(full: mcpsync.Client) -> None:
    assert full.server_info.name == "sdk-test-server"
    assert full.protocol_version == "2025-11-25"
    assert full.instructions == "Test server for mcpsync."
    caps = stats(full)["clientCapabilities"]
    assert {"sampling", "elicitation", "roots"} <= set(caps)
    full.ping()


def test_transport_reports_subprotocol_and_hides_query(bridge: Bridge) -> None:
    transport = WebSocketTransport(bridge.url(secret="s3cr3t"))
    client = mcpsync.Client(transport, mode="legacy", timeout=20.0)
    with client:
        assert transport.subprotocol == "mcp"
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    assert "s3cr3t" not in transport.describe()
    assert transport.describe() == f"websocket:ws://127.0.0.1:{bridge.port}/mcp"
    assert transport.closed


# --------------------------------------------------------------------------- tools


def test_tools(full: mcpsync.Client) -> None:
    tools = full.list_tools()  # several pages of 3
    assert [tool.name for tool in tools][: len(sdk_catalog.TOOLS)] == [t["name"] for t in sdk_catalog.TOOLS]
    assert full.call_tool("echo", {"text": "héllo wörld"}).text == "héllo wörld"
    assert full.call_tool("add", {"a": 2, "b": 40}).structured_content == {"sum": 42}
    failed = full.call_tool("fail", {"message": "broken on purpose"})
    assert failed.is_error
    with pytest.raises(mcpsync.ToolError):
        failed.raise_for_error()
    content = full.call_tool("media").content
    assert [type(c).__name__ for c in content] == [
        "TextContent",
        "ImageContent",
        "AudioContent",
        "ResourceLink",
        "EmbeddedResource",
        "EmbeddedResource",
    ]
    with pytest.raises(mcpsync.InvalidParams):
        full.call_tool("no-such-tool")
    assert full.request("tools/call", {"name": "echo", "arguments": {"text": "raw"}})["content"] == [
        {"type": "text", "text": "raw"}
    ]


def test_large_message_both_ways(full: mcpsync.Client) -> None:
    # One message, one frame, in both directions: 3 MB is far beyond one TCP segment.
    text = "ü" * 1_500_000
    assert full.call_tool("echo", {"text": text}).text == text


def test_concurrent_calls_from_threads(full: mcpsync.Client) -> None:
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(10):
                results[n * 100 + i] = full.call_tool("echo", {"text": f"{n}-{i}"}).text
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,), name=f"test-ws-{n}") for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    assert results == {n * 100 + i: f"{n}-{i}" for n in range(8) for i in range(10)}


# --------------------------------------------------------------------------- resources, prompts


def test_resources(full: mcpsync.Client) -> None:
    assert [r.uri for r in full.list_resources()] == [r["uri"] for r in sdk_catalog.RESOURCES]
    templates = full.list_resource_templates()
    assert [t.uri_template for t in templates] == [t["uriTemplate"] for t in sdk_catalog.TEMPLATES]
    (text,) = full.read_resource("memo://note/3").contents
    assert isinstance(text, types.TextResourceContents) and text.text == "note 3"
    (blob,) = full.read_resource("memo://blob/1").contents
    assert isinstance(blob, types.BlobResourceContents) and blob.blob == "AAECAw=="
    with pytest.raises(mcpsync.ResourceNotFound):
        full.read_resource("memo://note/999")


def test_resource_subscription_notification(full: mcpsync.Client, recorder: Any) -> None:
    updated = recorder()
    handle = full.on("notifications/resources/updated", updated)
    try:
        full.subscribe_resource("memo://note/1")
        assert full.call_tool("touch", {"uri": "memo://note/1"}).text == "notified"
        assert updated.wait(1) == [{"uri": "memo://note/1"}]
        full.unsubscribe_resource("memo://note/1")
        assert full.call_tool("touch", {"uri": "memo://note/1"}).text == "not subscribed"
    finally:
        handle.remove()
    assert all(_handler_thread(name) for name in updated.threads)


def test_prompts_and_completion(full: mcpsync.Client) -> None:
    assert [p.name for p in full.list_prompts()] == [p["name"] for p in sdk_catalog.PROMPTS]
    (message,) = full.get_prompt("greet", {"name": "Ada", "style": "formal"}).messages
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Please greet Ada in a formal way."
    with pytest.raises(mcpsync.InvalidParams):
        full.get_prompt("greet", {})
    completion = full.complete(types.PromptReference(name="greet"), "style", "f")
    assert completion.values == ["formal", "friendly", "funny"]
    completion = full.complete(types.ResourceTemplateReference(uri="memo://greeting/{name}"), "name", "al")
    assert completion.values == ["alice", "alfred"]


# --------------------------------------------------------------------------- progress, logging


def test_progress(full: mcpsync.Client, recorder: Any) -> None:
    progress = recorder()
    result = full.call_tool("slow", {"steps": 4, "delay": 0.01}, progress=progress)
    assert result.text == "done after 4 steps"
    assert progress.wait(4) == [(float(i), 4.0, f"step {i}/4") for i in range(1, 5)]
    assert all(_handler_thread(name) for name in progress.threads)


def test_progress_resets_timeout(full: mcpsync.Client) -> None:
    result = full.call_tool("slow", {"steps": 5, "delay": 0.2}, timeout=0.8, progress=lambda *a: None)
    assert result.text == "done after 5 steps"
    with pytest.raises(mcpsync.RequestTimeout):
        full.call_tool("slow", {"steps": 10, "delay": 0.3}, timeout=0.5, reset_timeout_on_progress=False)
    assert full.call_tool("echo", {"text": "after timeout"}).text == "after timeout"


def test_logging(full: mcpsync.Client, seen: Seen) -> None:
    before = len(seen.calls.get("log", []))
    full.set_logging_level("warning")
    try:
        assert full.call_tool("log").text == "5"
        received = seen.wait("log", before + 5)[before:]
    finally:
        full.set_logging_level("debug")
    assert [p.level for p in received] == ["warning", "error", "critical", "alert", "emergency"]
    assert received[0].data == {"msg": "warning message"}


# --------------------------------------------------------------------------- server-to-client requests


def test_sampling(full: mcpsync.Client, seen: Seen) -> None:
    before = len(seen.calls.get("sampling", []))
    result = full.call_tool("sample", {"prompt": "hello"})
    assert result.text == "sampled by ws-model"
    assert result.structured_content["content"] == {"type": "text", "text": "echo: hello"}
    params = seen.wait("sampling", before + 1)[before]
    assert params.max_tokens == 64 and params.system_prompt == "be brief"


def test_elicitation_form_and_url(full: mcpsync.Client, seen: Seen, recorder: Any) -> None:
    result = full.call_tool("elicit_form", {"message": "Your details?"})
    assert result.structured_content == {"action": "accept", "content": {"name": "Ada", "age": 36}}
    completed = recorder()
    handle = full.on("notifications/elicitation/complete", completed)
    try:
        assert full.call_tool("elicit_url", {"url": "https://example.com/a"}).text == "accept"
        assert completed.wait(1) == [{"elicitationId": "elicit-1"}]
    finally:
        handle.remove()
    form, url = seen.wait("elicitation", 2)[-2:]
    assert isinstance(form, types.ElicitRequestFormParams) and form.message == "Your details?"
    assert isinstance(url, types.ElicitRequestURLParams) and url.url == "https://example.com/a"


def test_roots(full: mcpsync.Client) -> None:
    result = full.call_tool("list_roots")
    assert result.text == "file:///srv/a file:///srv/b"
    full.notify_roots_changed()
    assert stats(full)["rootsChanged"] == 1


def test_handlers_never_run_on_the_reader(full: mcpsync.Client, seen: Seen) -> None:
    full.call_tool("sample", {"prompt": "where am I"})
    with seen.lock:
        threads = list(seen.threads)
    assert threads and all(_handler_thread(name) for name in threads), threads


# --------------------------------------------------------------------------- notifications


def test_list_changed_callback_may_call_the_client(full: mcpsync.Client, recorder: Any) -> None:
    seen_names = recorder()

    def on_changed(params: dict[str, Any]) -> None:
        seen_names([tool.name for tool in full.list_tools()])  # re-entrant call from a callback

    handle = full.on("notifications/tools/list_changed", on_changed)
    try:
        full.call_tool("add_tool", {"name": "ws-dynamic"})
        (names,) = seen_names.wait(1)
    finally:
        handle.remove()
    assert "ws-dynamic" in names
    assert full.call_tool("ws-dynamic").text == "dynamic tool ws-dynamic"


# --------------------------------------------------------------------------- auth and headers


def test_bearer_auth_object_on_the_handshake(bridge: Bridge) -> None:
    import requests

    class Bearer(requests.auth.AuthBase):
        def __init__(self, token: str) -> None:
            self.token = token
            self.calls = 0

        def __call__(self, request: Any) -> Any:
            self.calls += 1
            request.headers["Authorization"] = f"Bearer {self.token}"
            return request

    auth = Bearer("tok-123")
    with mcpsync.Client.websocket(bridge.url(token="tok-123"), auth=auth, mode="legacy") as client:
        assert client.call_tool("echo", {"text": "authorized"}).text == "authorized"
    assert auth.calls == 1

    bad = mcpsync.Client.websocket(bridge.url(token="tok-123"), auth=Bearer("bad-token-zzz"), mode="legacy")
    try:
        with pytest.raises(mcpsync.HTTPStatusError) as info:
            bad.connect()
        assert info.value.status == 401
        assert "bad-token-zzz" not in str(info.value)
    finally:
        bad.close()


def test_static_headers_on_the_handshake(bridge: Bridge) -> None:
    url = bridge.url(header="X-Api-Key:k-42")
    with mcpsync.Client.websocket(url, headers={"X-Api-Key": "k-42"}, mode="legacy") as client:
        assert client.call_tool("echo", {"text": "keyed"}).text == "keyed"
    client = mcpsync.Client.websocket(url, mode="legacy")
    try:
        with pytest.raises(mcpsync.HTTPStatusError) as info:
            client.connect()
        assert info.value.status == 403
    finally:
        client.close()


def test_bad_arguments_fail_at_construction() -> None:
    with pytest.raises(ValueError):
        mcpsync.Client.websocket("http://127.0.0.1:1/mcp")
    with pytest.raises(ValueError):
        mcpsync.Client.websocket("ws://user:pw@127.0.0.1:1/mcp")
    with pytest.raises(ValueError):
        mcpsync.Client.websocket("ws://127.0.0.1:1/mcp", headers={"X-Evil": "a\r\nInjected: 1"})
    with pytest.raises(TypeError):
        mcpsync.Client.websocket("ws://127.0.0.1:1/mcp", no_such_option=1)


# --------------------------------------------------------------------------- modern era


def test_modern_era_over_websocket(bridge: Bridge) -> None:
    # mode="auto" finds 2026-07-28 (no handshake; input requests instead of server requests).
    def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            content=types.TextContent(text="modern"), model="ws-modern", stop_reason="endTurn"
        )

    with mcpsync.Client.websocket(bridge.url(), timeout=20.0, sampling_handler=sampling) as client:
        assert client.protocol_version == "2026-07-28"
        assert [t.name for t in client.list_tools()][:2] == ["echo", "add"]
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"sum": 3}
        assert client.call_tool("sample", {"prompt": "hi"}).text == "sampled by ws-modern"
