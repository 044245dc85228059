"""Every client feature against ``@modelcontextprotocol/server-everything`` (npm), over stdio.

The package is pinned in ``tests/node/package.json``; ``conftest.everything_server`` installs it
with ``npm ci`` on a fresh machine. The server speaks only the handshake era, and registers its
sampling, elicitation and roots tools only for a client that advertises those capabilities.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import mcpsync
from mcpsync import types

pytestmark = [pytest.mark.node, pytest.mark.timeout(60)]

BASE_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
}
CONDITIONAL_TOOLS = {
    "get-roots-list",
    "trigger-elicitation-request",
    "trigger-url-elicitation",
    "trigger-sampling-request",
}
ROOTS = [
    types.Root(uri="file:///workspace/one", name="one"),
    types.Root(uri="file:///workspace/two", name="two"),
]

ClientFactory = Callable[..., mcpsync.Client]


def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    prompt = params.messages[0].content
    assert isinstance(prompt, types.TextContent)
    return types.CreateMessageResult(
        content=types.TextContent(text=f"LLM says: {prompt.text}"),
        model="everything-test-model",
        stop_reason="endTurn",
    )


def elicitation(params: Any) -> types.ElicitResult:
    if isinstance(params, types.ElicitRequestURLParams):
        return types.ElicitResult(action="accept")
    return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True, "integer": 7})


@pytest.fixture
def make_client(everything_server: list[str]) -> Iterator[ClientFactory]:
    """``make_client(**client_options)``: a client of a fresh server process, closed at teardown."""
    clients: list[mcpsync.Client] = []

    def make(**options: Any) -> mcpsync.Client:
        options.setdefault("timeout", 20.0)
        client = mcpsync.Client.stdio(everything_server[0], args=everything_server[1:], **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture(scope="module")
def plain(everything_server: list[str]) -> Iterator[mcpsync.Client]:
    """A client without handlers, shared by the tests that only read."""
    client = mcpsync.Client.stdio(everything_server[0], args=everything_server[1:], timeout=20.0)
    with client:
        # Start the callback threads now, so the per-test leak check does not count them.
        client.call_tool(
            "trigger-long-running-operation", {"duration": 0, "steps": 1}, progress=lambda *a: None
        )
        yield client


# --------------------------------------------------------------------------- handshake and tools


def test_identity(plain: mcpsync.Client) -> None:
    assert plain.server_info.name == "mcp-servers/everything"
    assert plain.server_info.title == "Everything Reference Server"
    # The server speaks only the handshake era: "auto" must fall back to initialize.
    assert plain.protocol_version == "2025-11-25"
    assert plain.instructions
    caps = plain.server_capabilities
    assert caps.tools is not None and caps.tools.list_changed is True
    assert caps.resources is not None and caps.resources.subscribe is True
    assert caps.logging is not None and caps.completions is not None


def test_conditional_tools_follow_client_capabilities(
    plain: mcpsync.Client, make_client: ClientFactory
) -> None:
    assert {tool.name for tool in plain.list_tools()} & CONDITIONAL_TOOLS == set()
    full = make_client(sampling_handler=sampling, elicitation_handler=elicitation, roots=ROOTS)
    names = {tool.name for tool in full.list_tools()}
    assert BASE_TOOLS | CONDITIONAL_TOOLS <= names


def test_simple_tools(plain: mcpsync.Client) -> None:
    assert plain.call_tool("echo", {"message": "hi there"}).text == "Echo: hi there"
    assert plain.call_tool("get-sum", {"a": 2, "b": 3.5}).text == "The sum of 2 and 3.5 is 5.5."
    tools = {tool.name: tool for tool in plain.list_tools()}
    assert tools["echo"].input_schema["properties"]["message"]["type"] == "string"
    assert tools["echo"].annotations is not None and tools["echo"].annotations.read_only_hint is True
    assert tools["echo"].title == "Echo Tool"


def test_structured_content(plain: mcpsync.Client) -> None:
    result = plain.call_tool("get-structured-content", {"location": "Chicago"})
    assert result.structured_content == {
        "temperature": 36,
        "conditions": "Light rain / drizzle",
        "humidity": 82,
    }
    assert json.loads(result.text) == result.structured_content
    schema = {tool.name: tool for tool in plain.list_tools()}["get-structured-content"].output_schema
    assert schema is not None and set(schema["properties"]) == {"temperature", "conditions", "humidity"}


def test_invalid_arguments(plain: mcpsync.Client) -> None:
    # The TypeScript SDK reports input validation failures as a tool error (isError), not JSON-RPC.
    result = plain.call_tool("get-sum", {"a": "not a number"})
    assert result.is_error is True
    with pytest.raises(mcpsync.ToolError):
        result.raise_for_error()


def test_content_types(plain: mcpsync.Client) -> None:
    before, image, after = plain.call_tool("get-tiny-image").content
    assert isinstance(before, types.TextContent) and isinstance(after, types.TextContent)
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(b"\x89PNG")

    intro, *links = plain.call_tool("get-resource-links", {"count": 4}).content
    assert isinstance(intro, types.TextContent)
    assert [type(link) for link in links] == [types.ResourceLink] * 4
    assert links[1].uri == "demo://resource/dynamic/text/2"  # type: ignore[union-attr]

    content = plain.call_tool("get-resource-reference", {"resourceType": "Text", "resourceId": 3}).content
    embedded = [block for block in content if isinstance(block, types.EmbeddedResource)]
    assert len(embedded) == 1
    assert isinstance(embedded[0].resource, types.TextResourceContents)
    assert embedded[0].resource.uri == "demo://resource/dynamic/text/3"

    annotated = plain.call_tool(
        "get-annotated-message", {"messageType": "error", "includeImage": True}
    ).content
    assert isinstance(annotated[0], types.TextContent) and annotated[0].annotations is not None
    assert annotated[0].annotations.priority == 1.0
    assert annotated[0].annotations.audience == ["user", "assistant"]
    assert isinstance(annotated[1], types.ImageContent)


def test_env_is_merged_over_a_safe_default(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPSYNC_TEST_PARENT_SECRET", "must-not-leak")
    client = make_client(env={"MCPSYNC_TEST_VAR": "passed through"})
    env = json.loads(client.call_tool("get-env").text)
    assert env["MCPSYNC_TEST_VAR"] == "passed through"
    assert "MCPSYNC_TEST_PARENT_SECRET" not in env
    assert "PATH" in env


def test_long_running_operation_progress(
    plain: mcpsync.Client, recorder: Any, callback_thread_check: Any
) -> None:
    progress = recorder()
    result = plain.call_tool(
        "trigger-long-running-operation", {"duration": 0.5, "steps": 5}, progress=progress
    )
    assert result.text == "Long running operation completed. Duration: 0.5 seconds, Steps: 5."
    assert progress.wait(5) == [(float(i), 5.0, None) for i in range(1, 6)]
    for name in progress.threads:
        callback_thread_check(name)


# --------------------------------------------------------------------------- server→client requests


def test_sampling(make_client: ClientFactory, recorder: Any, callback_thread_check: Any) -> None:
    seen = recorder()

    def handler(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        seen(params)
        return sampling(params)

    client = make_client(sampling_handler=handler)
    result = client.call_tool("trigger-sampling-request", {"prompt": "What is MCP?", "maxTokens": 50})
    assert "LLM says: Resource trigger-sampling-request context: What is MCP?" in result.text
    assert "everything-test-model" in result.text
    (params,) = seen.calls
    assert params.system_prompt == "You are a helpful test server."
    assert params.max_tokens == 50 and params.temperature == 0.7
    callback_thread_check(seen.threads[0])


def test_elicitation_form(make_client: ClientFactory, recorder: Any) -> None:
    seen = recorder()

    def handler(params: Any) -> types.ElicitResult:
        seen(params)
        return elicitation(params)

    client = make_client(elicitation_handler=handler)
    result = client.call_tool("trigger-elicitation-request")
    assert "- Name: Ada Lovelace" in result.text
    assert "- Agreed to terms: true" in result.text
    assert "- Favorite Integer: 7" in result.text
    (params,) = seen.calls
    assert isinstance(params, types.ElicitRequestFormParams)
    assert params.requested_schema["required"] == ["name"]
    assert params.requested_schema["properties"]["email"]["format"] == "email"


def test_elicitation_declined(make_client: ClientFactory) -> None:
    client = make_client(elicitation_handler=lambda params: types.ElicitResult(action="decline"))
    assert "declined" in client.call_tool("trigger-elicitation-request").text


def test_url_elicitation(make_client: ClientFactory, recorder: Any) -> None:
    seen = recorder()

    def handler(params: Any) -> types.ElicitResult:
        seen(params)
        return elicitation(params)

    client = make_client(elicitation_handler=handler)
    args = {"url": "https://example.com/connect", "message": "Connect your account"}
    result = client.call_tool("trigger-url-elicitation", args)
    assert "User completed the URL elicitation flow" in result.text
    (params,) = seen.calls
    assert isinstance(params, types.ElicitRequestURLParams)
    assert params.url == "https://example.com/connect" and params.message == "Connect your account"
    assert params.elicitation_id

    # The error path: -32042 carries the elicitation the client must complete before retrying.
    with pytest.raises(mcpsync.UrlElicitationRequired) as info:
        client.call_tool("trigger-url-elicitation", {**args, "errorPath": True})
    assert info.value.code == -32042
    (required,) = info.value.data["elicitations"]
    assert required["mode"] == "url" and required["url"] == "https://modelcontextprotocol.io"
    # The retry of the same call is recognised by the server and goes through the request path.
    assert "User completed" in client.call_tool("trigger-url-elicitation", {**args, "errorPath": True}).text


def test_roots(make_client: ClientFactory, recorder: Any) -> None:
    current = list(ROOTS)
    logs = recorder()
    client = make_client(roots=lambda: list(current), logging_handler=logs)
    text = client.call_tool("get-roots-list").text
    assert "Current MCP Roots (2 total)" in text
    assert "1. one\n   URI: file:///workspace/one" in text

    # The server asks for the roots again when told they changed, and logs what it got.
    current.append(types.Root(uri="file:///workspace/three", name="three"))
    client.notify_roots_changed()

    logs.wait_until(lambda calls: any("3 root(s)" in str(p.data) for p in calls), what="a log of 3 roots")
    assert "Current MCP Roots (3 total)" in client.call_tool("get-roots-list").text


# --------------------------------------------------------------------------- resources, prompts, completion


def test_resources(plain: mcpsync.Client) -> None:
    resources = plain.list_resources()
    uris = {r.uri for r in resources}
    assert "demo://resource/static/document/instructions.md" in uris
    assert all(isinstance(r, types.Resource) for r in resources)
    (doc,) = plain.read_resource("demo://resource/static/document/instructions.md").contents
    assert isinstance(doc, types.TextResourceContents) and doc.mime_type == "text/markdown"
    assert doc.text

    templates = {t.uri_template for t in plain.list_resource_templates()}
    assert templates == {
        "demo://resource/dynamic/text/{resourceId}",
        "demo://resource/dynamic/blob/{resourceId}",
    }
    (text,) = plain.read_resource("demo://resource/dynamic/text/5").contents
    assert isinstance(text, types.TextResourceContents)
    assert text.text.startswith("Resource 5: This is a plaintext resource")
    (blob,) = plain.read_resource("demo://resource/dynamic/blob/6").contents
    assert isinstance(blob, types.BlobResourceContents)
    assert base64.b64decode(blob.blob).startswith(b"Resource 6: This is a base64 blob")


def test_read_unknown_resource(plain: mcpsync.Client) -> None:
    with pytest.raises(mcpsync.ServerError):
        plain.read_resource("demo://resource/dynamic/text/not-a-number")


def test_prompts(plain: mcpsync.Client) -> None:
    prompts = {p.name: p for p in plain.list_prompts()}
    assert set(prompts) == {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"}
    args = prompts["args-prompt"].arguments
    assert args is not None and {(a.name, a.required) for a in args} == {("city", True), ("state", False)}

    (message,) = plain.get_prompt("simple-prompt").messages
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "This is a simple prompt without arguments."
    (message,) = plain.get_prompt("args-prompt", {"city": "Paris", "state": "TX"}).messages
    assert message.content.text == "What's weather in Paris, TX?"  # type: ignore[union-attr]
    _intro, embedded = plain.get_prompt(
        "resource-prompt", {"resourceType": "Blob", "resourceId": "2"}
    ).messages
    assert isinstance(embedded.content, types.EmbeddedResource)
    assert isinstance(embedded.content.resource, types.BlobResourceContents)


def test_prompt_missing_argument(plain: mcpsync.Client) -> None:
    with pytest.raises(mcpsync.InvalidParams):
        plain.get_prompt("args-prompt", {})


def test_completion(plain: mcpsync.Client) -> None:
    ref = types.PromptReference(name="completable-prompt")
    assert plain.complete(ref, "department", "E").values == ["Engineering"]
    assert plain.complete(ref, "name", "", context={"department": "Sales"}).values == [
        "David",
        "Eve",
        "Frank",
    ]
    template = types.ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}")
    assert plain.complete(template, "resourceId", "3").values == ["3"]


# --------------------------------------------------------------------------- logging and notifications


def test_logging_and_subscriptions(
    make_client: ClientFactory, recorder: Any, callback_thread_check: Any
) -> None:
    logs = recorder()
    client = make_client(logging_handler=logs)
    client.set_logging_level("debug")
    updated = recorder()
    client.on("notifications/resources/updated", updated)

    uri = "demo://resource/static/document/features.md"
    client.subscribe_resource(uri)
    # The server acknowledges a subscription with an info log message.
    logs.wait(1)
    assert any("Received Subscribe Resource request" in str(p.data) for p in logs.calls)
    callback_thread_check(logs.threads[0])

    # Simulated updates start with one immediate notification for each subscribed URI.
    assert "Started" in client.call_tool("toggle-subscriber-updates").text
    assert updated.wait(1)[0] == {"uri": uri}
    assert "Stopped" in client.call_tool("toggle-subscriber-updates").text

    # Simulated logging starts with one immediate message at a random level.
    count = len(logs.calls)
    assert "Started" in client.call_tool("toggle-simulated-logging").text
    message = logs.wait(count + 1)[count]
    assert isinstance(message, types.LoggingMessageNotificationParams)
    assert message.level in ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
    assert "Stopped" in client.call_tool("toggle-simulated-logging").text
    client.unsubscribe_resource(uri)


def test_list_changed_on_connect(make_client: ClientFactory, recorder: Any) -> None:
    # Listeners registered before the (lazy) connection see what the server sends right after it.
    client = make_client(sampling_handler=sampling)
    changed = recorder()
    client.on("notifications/tools/list_changed", changed)
    client.connect()
    changed.wait(1)
    assert "trigger-sampling-request" in {tool.name for tool in client.list_tools()}


def test_ping(plain: mcpsync.Client) -> None:
    plain.ping()
    assert plain.request("ping") == {}
