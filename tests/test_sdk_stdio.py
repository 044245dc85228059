"""Every client feature against a real server built on the official Python SDK, over stdio.

The server is ``tests/servers/sdk_server.py``; its data is in ``tests/servers/sdk_catalog.py``.
It is dual-era, so most tests run twice: once pinned to the handshake era (``mode="legacy"``)
and once in ``mode="auto"``, where the client should find the 2026-07-28 era.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sdk_catalog

import mcpsync
from mcpsync import types

MODERN = "2026-07-28"
LATEST_HANDSHAKE = "2025-11-25"

pytestmark = pytest.mark.timeout(60)

ClientFactory = Callable[..., mcpsync.Client]


@pytest.fixture
def make_client(sdk_server: list[str]) -> Iterator[ClientFactory]:
    """``make_client(*server_options, **client_options)``: a connected client, closed at teardown."""
    clients: list[mcpsync.Client] = []

    def make(*server_options: str, **options: Any) -> mcpsync.Client:
        options.setdefault("timeout", 20.0)
        client = mcpsync.Client.stdio(sdk_server[0], args=[*sdk_server[1:], *server_options], **options)
        clients.append(client)
        return client.connect()

    yield make
    for client in clients:
        client.close()


@pytest.fixture(scope="module", params=["legacy", "auto"])
def era(request: pytest.FixtureRequest) -> str:
    """The client ``mode`` of :func:`shared`."""
    return str(request.param)


@pytest.fixture(scope="module")
def shared(era: str, sdk_server: list[str]) -> Iterator[mcpsync.Client]:
    """One client per era, without handlers, shared by tests that leave no server state behind."""
    client = mcpsync.Client.stdio(sdk_server[0], args=sdk_server[1:], mode=era, timeout=20.0)
    with client:
        # Callback threads start on first use; start them here, so that the per-test leak check
        # does not count them against whichever test happens to use them first.
        client.call_tool("slow", {"steps": 1, "delay": 0}, progress=lambda *args: None)
        yield client


def expected_version(mode: str) -> str:
    return LATEST_HANDSHAKE if mode == "legacy" else MODERN


ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])


def stats(client: mcpsync.Client) -> dict[str, Any]:
    result = client.call_tool("stats")
    assert isinstance(result.structured_content, dict)
    return result.structured_content


# --------------------------------------------------------------------------- handshake


def test_server_identity_and_capabilities(shared: mcpsync.Client) -> None:
    assert shared.server_info.name == "sdk-test-server"
    assert shared.server_info.version == "2.3.0-test"
    assert shared.server_info.title == "mcpsync SDK test server"
    assert shared.instructions == "Test server for mcpsync."
    caps = shared.server_capabilities
    assert caps.tools is not None and caps.resources is not None and caps.prompts is not None
    assert caps.completions is not None
    assert caps.logging is not None


def test_negotiated_version_per_era(shared: mcpsync.Client, era: str) -> None:
    # "auto" must find the 2026-07-28 era of this dual-era server.
    assert shared.protocol_version == expected_version(era)
    assert stats(shared)["protocolVersion"] == expected_version(era)


def test_no_client_capabilities_without_handlers(shared: mcpsync.Client) -> None:
    caps = stats(shared)["clientCapabilities"] or {}
    assert "sampling" not in caps and "elicitation" not in caps and "roots" not in caps


@ERAS
def test_list_changed_capabilities(make_client: ClientFactory, mode: str) -> None:
    # In 2026-07-28 the SDK derives them from serving subscriptions/listen.
    caps = make_client(mode=mode).server_capabilities
    assert caps.tools is not None and caps.tools.list_changed is True
    assert caps.prompts is not None and caps.prompts.list_changed is True
    assert caps.resources is not None and caps.resources.subscribe is True
    assert caps.resources.list_changed is True


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_client_pinned_to_older_version(make_client: ClientFactory, version: str) -> None:
    client = make_client(mode=version)
    assert client.protocol_version == version
    assert stats(client)["protocolVersion"] == version
    assert client.call_tool("echo", {"text": version}).text == version


def test_older_server_answers_older_version(make_client: ClientFactory) -> None:
    # The server knows only up to 2025-06-18 and answers the client's newer version with it.
    client = make_client("--legacy-only", "--versions", "2025-03-26,2025-06-18")
    assert client.protocol_version == "2025-06-18"
    assert stats(client)["protocolVersion"] == "2025-06-18"


def test_auto_mode_falls_back_to_handshake(make_client: ClientFactory) -> None:
    client = make_client("--legacy-only")
    assert client.protocol_version == LATEST_HANDSHAKE
    assert client.call_tool("echo", {"text": "fallback"}).text == "fallback"


def test_server_with_unknown_version_is_refused(sdk_server: list[str]) -> None:
    client = mcpsync.Client.stdio(
        sdk_server[0], args=[*sdk_server[1:], "--legacy-only", "--versions", "2023-01-01"], timeout=20.0
    )
    try:
        with pytest.raises(mcpsync.UnsupportedProtocolVersion):
            client.connect()
    finally:
        client.close()


@ERAS
def test_client_info_and_ping(make_client: ClientFactory, mode: str) -> None:
    client = make_client(mode=mode, client_info=("integration-test", "9.9"))
    assert stats(client)["clientInfo"] == {"name": "integration-test", "version": "9.9"}
    client.ping()


# --------------------------------------------------------------------------- tools


def test_list_tools_walks_every_page(shared: mcpsync.Client) -> None:
    before = stats(shared)["listCalls"].get("tools/list", 0)
    tools = shared.list_tools()
    after = stats(shared)["listCalls"]["tools/list"]
    assert [tool.name for tool in tools] == [tool["name"] for tool in sdk_catalog.TOOLS]
    pages = -(-len(sdk_catalog.TOOLS) // 3)
    assert after - before == pages
    by_name = {tool.name: tool for tool in tools}
    assert isinstance(by_name["echo"], types.Tool)
    assert by_name["echo"].input_schema["required"] == ["text"]
    assert by_name["echo"].annotations is not None and by_name["echo"].annotations.read_only_hint is True
    assert by_name["add"].title == "Adder"
    assert by_name["add"].output_schema == sdk_catalog.TOOLS[1]["outputSchema"]


def test_call_tool_text(shared: mcpsync.Client) -> None:
    result = shared.call_tool("echo", {"text": "héllo wörld"})
    assert isinstance(result, types.CallToolResult)
    assert result.text == "héllo wörld"
    assert isinstance(result.content[0], types.TextContent)
    assert not result.is_error
    result.raise_for_error()


def test_call_tool_structured(shared: mcpsync.Client) -> None:
    result = shared.call_tool("add", {"a": 2, "b": 40})
    assert result.structured_content == {"sum": 42}
    assert result.text == "42"


def test_call_tool_is_error_is_data(shared: mcpsync.Client) -> None:
    result = shared.call_tool("fail", {"message": "broken on purpose"})
    assert result.is_error is True
    assert result.text == "broken on purpose"
    with pytest.raises(mcpsync.ToolError, match="broken on purpose"):
        result.raise_for_error()


def test_call_tool_every_content_type(shared: mcpsync.Client) -> None:
    content = shared.call_tool("media").content
    text, image, audio, link, embedded_text, embedded_blob = content
    assert isinstance(text, types.TextContent) and text.text == "media follows"
    assert (
        isinstance(image, types.ImageContent)
        and image.mime_type == "image/png"
        and image.data == "iVBORw0KGgo="
    )
    assert isinstance(audio, types.AudioContent) and audio.mime_type == "audio/wav"
    assert isinstance(link, types.ResourceLink) and link.uri == "memo://note/1" and link.name == "note-1"
    assert isinstance(embedded_text, types.EmbeddedResource)
    assert isinstance(embedded_text.resource, types.TextResourceContents)
    assert embedded_text.resource.text == "note 2"
    assert isinstance(embedded_blob, types.EmbeddedResource)
    assert isinstance(embedded_blob.resource, types.BlobResourceContents)
    assert embedded_blob.resource.blob == "AAECAw=="


def test_unknown_tool_is_a_server_error(shared: mcpsync.Client) -> None:
    with pytest.raises(mcpsync.ServerError) as info:
        shared.call_tool("no-such-tool")
    assert info.value.code == -32602
    # The connection survives an error reply.
    assert shared.call_tool("echo", {"text": "still here"}).text == "still here"


def test_raw_request(shared: mcpsync.Client) -> None:
    result = shared.request("tools/call", {"name": "echo", "arguments": {"text": "raw"}})
    assert result["content"] == [{"type": "text", "text": "raw"}]


# --------------------------------------------------------------------------- resources


def test_list_resources_and_templates(shared: mcpsync.Client) -> None:
    resources = shared.list_resources()
    assert [r.uri for r in resources] == [r["uri"] for r in sdk_catalog.RESOURCES]
    assert all(isinstance(r, types.Resource) for r in resources)
    assert resources[0].mime_type == "text/plain"
    templates = shared.list_resource_templates()
    assert [t.uri_template for t in templates] == [t["uriTemplate"] for t in sdk_catalog.TEMPLATES]


def test_read_resources(shared: mcpsync.Client) -> None:
    (text,) = shared.read_resource("memo://note/3").contents
    assert isinstance(text, types.TextResourceContents)
    assert (text.uri, text.text, text.mime_type) == ("memo://note/3", "note 3", "text/plain")
    (blob,) = shared.read_resource("memo://blob/1").contents
    assert isinstance(blob, types.BlobResourceContents) and blob.blob == "AAECAw=="
    (templated,) = shared.read_resource("memo://greeting/ada").contents
    assert isinstance(templated, types.TextResourceContents) and templated.text == "Hello, ada!"


def test_read_missing_resource(shared: mcpsync.Client) -> None:
    with pytest.raises(mcpsync.ResourceNotFound) as info:
        shared.read_resource("memo://note/999")
    assert info.value.code == -32002
    assert info.value.data == {"uri": "memo://note/999"}


# --------------------------------------------------------------------------- prompts and completion


def test_prompts(shared: mcpsync.Client) -> None:
    prompts = shared.list_prompts()
    assert [p.name for p in prompts] == [p["name"] for p in sdk_catalog.PROMPTS]
    greet = prompts[0]
    assert greet.arguments is not None
    assert [(a.name, a.required) for a in greet.arguments] == [("name", True), ("style", False)]
    result = shared.get_prompt("greet", {"name": "Ada", "style": "formal"})
    assert result.description == "Greet someone"
    (message,) = result.messages
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Please greet Ada in a formal way."


def test_prompt_with_several_messages(shared: mcpsync.Client) -> None:
    messages = shared.get_prompt("multi").messages
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert isinstance(messages[2].content, types.EmbeddedResource)


def test_prompt_missing_argument(shared: mcpsync.Client) -> None:
    with pytest.raises(mcpsync.InvalidParams):
        shared.get_prompt("greet", {})


def test_completion(shared: mcpsync.Client) -> None:
    completion = shared.complete(types.PromptReference(name="greet"), "style", "f")
    assert completion.values == ["formal", "friendly", "funny"]
    completion = shared.complete(types.PromptReference(name="greet"), "style", "fr", context={"name": "Bo"})
    assert completion.values == ["friendly-for-Bo"]
    completion = shared.complete(types.ResourceTemplateReference(uri="memo://greeting/{name}"), "name", "al")
    assert completion.values == ["alice", "alfred"]


# --------------------------------------------------------------------------- progress and timeouts


def test_progress_callback(shared: mcpsync.Client, recorder: Any, callback_thread_check: Any) -> None:
    progress = recorder()
    result = shared.call_tool("slow", {"steps": 4, "delay": 0.01}, progress=progress)
    assert result.text == "done after 4 steps"
    calls = progress.wait(4)
    assert calls == [(float(i), 4.0, f"step {i}/4") for i in range(1, 5)]
    for name in progress.threads:
        callback_thread_check(name)


def test_progress_resets_the_timeout(make_client: ClientFactory) -> None:
    client = make_client(mode="legacy")
    # Each step is shorter than the timeout, the whole call is longer: only progress keeps it alive.
    result = client.call_tool("slow", {"steps": 6, "delay": 0.2}, timeout=0.8, progress=lambda *a: None)
    assert result.text == "done after 6 steps"
    with pytest.raises(mcpsync.RequestTimeout):
        client.call_tool(
            "slow",
            {"steps": 10, "delay": 0.3},
            timeout=0.5,
            progress=lambda *a: None,
            reset_timeout_on_progress=False,
        )
    with pytest.raises(TimeoutError):
        client.call_tool(
            "slow", {"steps": 10, "delay": 0.3}, timeout=0.5, progress=lambda *a: None, max_total_timeout=0.9
        )
    # The connection is still usable after the timeouts.
    assert client.call_tool("echo", {"text": "after"}).text == "after"


# --------------------------------------------------------------------------- logging


@ERAS
def test_logging_level_and_handler(
    make_client: ClientFactory, recorder: Any, callback_thread_check: Any, mode: str
) -> None:
    logs = recorder()
    client = make_client(mode=mode, logging_handler=logs)
    client.set_logging_level("warning")
    result = client.call_tool("log")
    if mode == "legacy":
        # logging/setLevel reached the server, which filters; 2026-07-28 sends the level with
        # each request instead and the SDK filters for the server.
        assert stats(client)["logLevel"] == "warning"
        assert result.text == "5"
    received = logs.wait(5)
    assert [p.level for p in received] == ["warning", "error", "critical", "alert", "emergency"]
    assert received[0].logger == "sdk-server"
    assert received[0].data == {"msg": "warning message"}
    for name in logs.threads:
        callback_thread_check(name)


def test_blocked_callback_does_not_block_replies(make_client: ClientFactory) -> None:
    # A callback that blocks must not stall the reader: replies keep arriving meanwhile.
    release = threading.Event()
    entered = threading.Event()

    def blocking_handler(params: Any) -> None:
        entered.set()
        release.wait(30)

    client = make_client(mode="legacy", logging_handler=blocking_handler)
    try:
        client.call_tool("log", {"levels": ["error", "alert", "emergency"]})
        assert entered.wait(10)
        for n in range(20):
            assert client.call_tool("echo", {"text": f"while blocked {n}"}).text == f"while blocked {n}"
    finally:
        release.set()


def test_failing_callback_goes_to_exception_handler(make_client: ClientFactory, recorder: Any) -> None:
    errors = recorder()

    def broken_handler(params: Any) -> None:
        raise RuntimeError("callback bug")

    client = make_client(mode="legacy", logging_handler=broken_handler, exception_handler=errors)
    client.call_tool("log", {"levels": ["error", "alert"]})
    first, _second = errors.wait(2)
    assert isinstance(first, RuntimeError) and str(first) == "callback bug"
    assert client.call_tool("echo", {"text": "alive"}).text == "alive"


# --------------------------------------------------------------------------- sampling


def _sampling_result(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    if params.tools:
        return types.CreateMessageResult(
            content=types.ToolUseContent(id="call-1", name=params.tools[0].name, input={"city": "Paris"}),
            model="test-model",
            stop_reason="toolUse",
        )
    prompt = params.messages[0].content
    assert isinstance(prompt, types.TextContent)
    return types.CreateMessageResult(
        content=types.TextContent(text=f"echo: {prompt.text}"), model="test-model", stop_reason="endTurn"
    )


@ERAS
def test_sampling(make_client: ClientFactory, recorder: Any, callback_thread_check: Any, mode: str) -> None:
    handler = recorder()

    def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        handler(params)
        return _sampling_result(params)

    client = make_client(mode=mode, sampling_handler=sampling)
    assert "sampling" in stats(client)["clientCapabilities"]
    result = client.call_tool("sample", {"prompt": "hello"})
    assert result.text == "sampled by test-model"
    assert result.structured_content == {
        "role": "assistant",
        "content": {"type": "text", "text": "echo: hello"},
        "model": "test-model",
        "stopReason": "endTurn",
    }
    (params,) = handler.calls
    assert isinstance(params, types.CreateMessageRequestParams)
    assert params.max_tokens == 64 and params.system_prompt == "be brief"
    callback_thread_check(handler.threads[0])

    # Sampling with tools (2025-11-25): the handler sees the tools and answers with a tool call.
    result = client.call_tool("sample", {"prompt": "weather?", "with_tools": True})
    assert not result.is_error, result.text
    params = handler.calls[1]
    assert params.tools is not None and params.tools[0].name == "weather"
    assert params.tool_choice is not None and params.tool_choice.mode == "auto"
    assert result.structured_content["content"] == {
        "type": "tool_use",
        "id": "call-1",
        "name": "weather",
        "input": {"city": "Paris"},
    }
    assert result.structured_content["stopReason"] == "toolUse"


def test_sampling_handler_may_call_the_client(make_client: ClientFactory) -> None:
    # The handler runs on a worker thread while the server waits for its answer; calling the
    # client from there must not deadlock.
    client: mcpsync.Client | None = None

    def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        assert client is not None
        echoed = client.call_tool("echo", {"text": "from inside the handler"}).text
        return types.CreateMessageResult(content=types.TextContent(text=echoed), model="nested")

    client = make_client(mode="legacy", sampling_handler=sampling)
    result = client.call_tool("sample", {"prompt": "x"})
    assert result.structured_content["content"]["text"] == "from inside the handler"


def test_sampling_handler_error_reaches_server(make_client: ClientFactory) -> None:
    def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        raise RuntimeError("no LLM today")

    client = make_client(mode="legacy", sampling_handler=sampling)
    # The server's tool fails (the client answered with a JSON-RPC error); the client lives on.
    with pytest.raises(mcpsync.ServerError):
        client.call_tool("sample", {"prompt": "x"})
    assert client.call_tool("echo", {"text": "ok"}).text == "ok"


# --------------------------------------------------------------------------- elicitation


def _elicit(params: types.ElicitRequestFormParams | types.ElicitRequestURLParams) -> types.ElicitResult:
    if isinstance(params, types.ElicitRequestURLParams):
        return types.ElicitResult(action="accept")
    if "decline" in params.message:
        return types.ElicitResult(action="decline")
    return types.ElicitResult(action="accept", content={"name": "Ada", "age": 36})


@ERAS
def test_elicitation(
    make_client: ClientFactory, recorder: Any, callback_thread_check: Any, mode: str
) -> None:
    handler = recorder()

    def elicit(params: Any) -> types.ElicitResult:
        handler(params)
        return _elicit(params)

    client = make_client(mode=mode, elicitation_handler=elicit)
    assert stats(client)["clientCapabilities"]["elicitation"] == {"form": {}, "url": {}}

    # Form mode.
    result = client.call_tool("elicit_form", {"message": "Your details?"})
    assert result.text == "accept"
    assert result.structured_content == {"action": "accept", "content": {"name": "Ada", "age": 36}}
    params = handler.calls[0]
    assert isinstance(params, types.ElicitRequestFormParams)
    assert params.message == "Your details?"
    assert params.requested_schema["required"] == ["name"]
    callback_thread_check(handler.threads[0])
    result = client.call_tool("elicit_form", {"message": "please decline"})
    assert result.structured_content == {"action": "decline"}

    # URL mode.
    completed = recorder()
    client.on("notifications/elicitation/complete", completed)
    result = client.call_tool("elicit_url", {"url": "https://example.com/authorize?x=1"})
    assert result.text == "accept"
    params = handler.calls[2]
    assert isinstance(params, types.ElicitRequestURLParams)
    assert params.url == "https://example.com/authorize?x=1"
    if mode == "legacy":
        # 2026-07-28 dropped elicitationId and notifications/elicitation/complete.
        assert params.elicitation_id == "elicit-1"
        assert completed.wait(1) == [{"elicitationId": "elicit-1"}]


# --------------------------------------------------------------------------- roots


@ERAS
def test_roots(make_client: ClientFactory, mode: str, tmp_path: Any) -> None:
    client = make_client(mode=mode, roots=[types.Root(uri="file:///srv/a", name="a"), ("file:///srv/b", "b")])
    result = client.call_tool("list_roots")
    assert result.text == "file:///srv/a file:///srv/b"
    assert result.structured_content["roots"][0] == {"uri": "file:///srv/a", "name": "a"}


def test_roots_change_notification(make_client: ClientFactory, tmp_path: Any) -> None:
    current = [str(tmp_path)]
    client = make_client(mode="legacy", roots=lambda: list(current))
    assert stats(client)["clientCapabilities"]["roots"] == {"listChanged": True}
    assert client.call_tool("list_roots").text == tmp_path.as_uri()
    current.append(str(tmp_path / "second"))
    client.notify_roots_changed()
    # The notification and the next request share the pipe; the server handles them in order.
    assert stats(client)["rootsChanged"] == 1
    assert client.call_tool("list_roots").text == f"{tmp_path.as_uri()} {(tmp_path / 'second').as_uri()}"


# --------------------------------------------------------------------------- notifications


@ERAS
def test_list_changed_callback_may_call_the_client(
    make_client: ClientFactory, recorder: Any, callback_thread_check: Any, mode: str
) -> None:
    # In 2026-07-28 on() rides the client's background subscriptions/listen stream.
    client = make_client(mode=mode)
    seen = recorder()

    def on_changed(params: dict[str, Any]) -> None:
        # Re-entrant: a callback calling the client must not deadlock the connection.
        seen([tool.name for tool in client.list_tools()])

    handle = client.on("notifications/tools/list_changed", on_changed)
    client.call_tool("add_tool", {"name": "dynamic-1"})
    (names,) = seen.wait(1)
    assert "dynamic-1" in names
    callback_thread_check(seen.threads[0])
    assert client.call_tool("dynamic-1").text == "dynamic tool dynamic-1"

    handle.remove()
    later = recorder()
    client.on("notifications/tools/list_changed", later)
    client.call_tool("add_tool", {"name": "dynamic-2"})
    later.wait(1)
    # Callbacks run in order on one dispatcher; the removed one would have run before `later`.
    assert len(seen.calls) == 1


def _uris(calls: list[dict[str, Any]]) -> list[str]:
    # 2026-07-28 tags each notification with its stream's id in _meta; only the URI matters here.
    return [call["uri"] for call in calls]


@ERAS
def test_resource_subscription(make_client: ClientFactory, recorder: Any, mode: str) -> None:
    client = make_client(mode=mode)
    updated = recorder()
    client.on("notifications/resources/updated", updated)
    client.subscribe_resource("memo://note/1")
    if mode == "legacy":
        assert stats(client)["subscriptions"] == ["memo://note/1"]
    client.call_tool("touch", {"uri": "memo://note/1"})
    assert _uris(updated.wait(1)) == ["memo://note/1"]
    client.unsubscribe_resource("memo://note/1")
    if mode == "legacy":
        assert stats(client)["subscriptions"] == []
    # Updates arrive in order: note/2's proves that note/1's, sent first, was not delivered.
    client.subscribe_resource("memo://note/2")
    client.call_tool("touch", {"uri": "memo://note/1"})
    client.call_tool("touch", {"uri": "memo://note/2"})
    assert _uris(updated.wait(2)) == ["memo://note/1", "memo://note/2"]


@ERAS
def test_wildcard_listener_sees_notifications(make_client: ClientFactory, recorder: Any, mode: str) -> None:
    client = make_client(mode=mode)
    everything = recorder()
    client.on("*", everything)
    client.call_tool("add_tool", {"name": "dyn"})
    everything.wait(1)


# --------------------------------------------------------------------------- lifecycle


def test_close_is_idempotent_and_final(make_client: ClientFactory) -> None:
    client = make_client(mode="legacy")
    client.close()
    client.close()
    with pytest.raises(mcpsync.ClientClosed):
        client.call_tool("echo", {"text": "x"})


def test_concurrent_close_from_another_thread(make_client: ClientFactory) -> None:
    client = make_client(mode="legacy")
    started = threading.Event()
    outcome: list[BaseException | str] = []

    def slow_call() -> None:
        started.set()
        try:
            outcome.append(client.call_tool("slow", {"steps": 50, "delay": 0.1}).text)
        except BaseException as exc:  # noqa: BLE001 - the test inspects whatever was raised
            outcome.append(exc)

    worker = threading.Thread(target=slow_call, name="test-slow-call")
    worker.start()
    started.wait(5)
    client.close()
    worker.join(10)
    assert not worker.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], mcpsync.ConnectionClosed)
