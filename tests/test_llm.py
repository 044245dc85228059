"""mcpsync.llm with the real ``openai`` and ``anthropic`` SDKs, a scripted model and real MCP servers.

The model is ``tests/servers/scripted_llm.py``: an HTTP server on 127.0.0.1 speaking the
Chat Completions, Responses and Anthropic Messages APIs, which checks what the providers
check (tool names, schemas, every tool call answered in place) and answers 400 otherwise, so
the SDKs raise. The MCP servers are the bundled demo server (a FakeServer over stdio), the
official SDK's test server and ``tests/servers/llm_tools_server.py`` (official SDK too).
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import openai
import attrs
import pytest
from scripted_llm import ScriptedLLM

import mcpsync
from mcpsync import ClientGroup, types
from mcpsync.llm import (
    ProviderResponseError,
    anthropic_sampling_handler,
    anthropic_tools,
    object_schema,
    openai_sampling_handler,
    openai_tools,
    run_tool_calls,
)

pytestmark = pytest.mark.timeout(120)

DEMO = [sys.executable, "-m", "mcpsync.demo"]
_OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")
_ANTHROPIC_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}\Z")


@pytest.fixture
def tools_server() -> list[str]:
    from conftest import SERVERS

    return [sys.executable, str(SERVERS / "llm_tools_server.py")]


@pytest.fixture
def scripted() -> Iterator[Callable[..., ScriptedLLM]]:
    """Start a scripted model with the given turns; stopped after the test."""
    started: list[ScriptedLLM] = []

    def start(*turns: list[tuple[str, Any]]) -> ScriptedLLM:
        llm = ScriptedLLM(list(turns)).__enter__()
        started.append(llm)
        return llm

    yield start
    for llm in started:
        llm.__exit__(None, None, None)


def _openai(llm: ScriptedLLM) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=llm.base_url + "/v1", max_retries=0, timeout=30)


def _anthropic(llm: ScriptedLLM) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=llm.base_url, max_retries=0, timeout=30)


def chat_loop(
    llm: ScriptedLLM, source: Any, question: str = "go", **kwargs: Any
) -> tuple[str, list[Any]]:
    """The Chat Completions loop as the docs teach it; the answer and the conversation."""
    with _openai(llm) as client:
        messages: list[Any] = [{"role": "user", "content": question}]
        for _ in range(5):
            resp = client.chat.completions.create(
                model="m", messages=messages, tools=openai_tools(source)
            )
            results = run_tool_calls(source, resp, **kwargs)
            if not results:
                return str(resp.choices[0].message.content), messages
            messages += [resp.choices[0].message, *results]
    raise AssertionError("the loop did not end")


def responses_loop(llm: ScriptedLLM, source: Any, question: str = "go") -> tuple[str, list[Any]]:
    with _openai(llm) as client:
        items: list[Any] = [{"role": "user", "content": question}]
        for _ in range(5):
            resp = client.responses.create(
                model="m", input=items, tools=openai_tools(source, api="responses")
            )
            results = run_tool_calls(source, resp)
            if not results:
                return resp.output_text, items
            items += [*resp.output, *results]
    raise AssertionError("the loop did not end")


def anthropic_loop(llm: ScriptedLLM, source: Any, question: str = "go") -> tuple[str, list[Any]]:
    with _anthropic(llm) as client:
        messages: list[Any] = [{"role": "user", "content": question}]
        for _ in range(5):
            resp = client.messages.create(
                model="m", max_tokens=256, messages=messages, tools=anthropic_tools(source)
            )
            results = run_tool_calls(source, resp)
            if not results:
                return str(resp.content[0].text), messages
            messages += [{"role": "assistant", "content": resp.content}, *results]
    raise AssertionError("the loop did not end")


LOOPS = {"chat": chat_loop, "responses": responses_loop, "anthropic": anthropic_loop}


# -- the whole loop, each provider --------------------------------------------------


@pytest.mark.parametrize("api", LOOPS)
def test_loop_over_a_group_of_real_servers(api: str, scripted: Any, sdk_server: list[str]) -> None:
    llm = scripted(
        [("demo__add", {"a": 2, "b": 3}), ("sdk__echo", {"text": "hi"}), ("fail", {"message": "boom"})]
    )
    with ClientGroup(
        {"demo": mcpsync.Client.stdio(DEMO), "sdk": mcpsync.Client.stdio(sdk_server)}
    ) as group:
        answer, _ = LOOPS[api](llm, group)
    # The model saw every result, in call order; the failed tool is marked as an error.
    assert answer == "Final answer: 5 | hi | Error: boom"
    assert llm.rejections == []
    assert len(llm.requests) == 2


@pytest.mark.parametrize("api", LOOPS)
def test_unknown_tools_and_bad_arguments_are_results_the_model_reads(api: str, scripted: Any) -> None:
    bad_json = "{not json" if api != "anthropic" else "[1, 2]"  # Anthropic sends parsed input
    llm = scripted([("!no_such_tool", {}), ("add", bad_json), ("echo", {"text": "still fine"})])
    with mcpsync.Client.stdio(DEMO) as client, pytest.warns() if api == "anthropic" else contextlib.nullcontext():
        answer, _ = LOOPS[api](llm, client)
    results = answer.removeprefix("Final answer: ").split(" | ")
    assert results[0] == "Error: there is no tool named 'no_such_tool'"
    assert results[1].startswith("Error: the arguments of add")
    assert ("not valid JSON" if api != "anthropic" else "must be a JSON object") in results[1]
    assert results[2] == "still fine"
    assert llm.rejections == []


@pytest.mark.parametrize("api", LOOPS)
def test_names_the_providers_refuse_are_mapped_and_back(
    api: str, scripted: Any, tools_server: list[str]
) -> None:
    from llm_tools_server import LONG

    with mcpsync.Client.stdio(tools_server) as client:
        definitions = (
            openai_tools(client, api="responses") if api != "anthropic" else anthropic_tools(client)
        )
        names = [d["name"] for d in definitions]
        pattern = _ANTHROPIC_NAME if api == "anthropic" else _OPENAI_NAME
        assert all(pattern.match(n) for n in names), names
        assert len(set(names)) == len(names)
        assert "weird_name_tool" in names  # a name that fits keeps itself
        # The made-up names are the ones the model gets; call them through the loop.
        long_name = names[[t.name for t in client.list_tools()].index(LONG)]
        dotted = names[[t.name for t in client.list_tools()].index("weird.name/tool")]
        assert (long_name == LONG) == (api == "anthropic")  # 105 characters fit Anthropic only
        llm = scripted([("!" + long_name, {}), ("!" + dotted, {}), ("weird_name_tool", {})])
        answer, _ = LOOPS[api](llm, client)
    assert (
        answer
        == f"Final answer: {LONG} ran with {{}} | weird.name/tool ran with {{}} | weird_name_tool ran with {{}}"
    )
    assert llm.rejections == []


def test_schemas_are_made_valid_for_each_provider(scripted: Any, tools_server: list[str]) -> None:
    """Top-level anyOf (from a real server) and a missing type (as some servers send) get fixed."""

    class Loose:  # a source is duck-typed: anything with list_tools() and call_tool()
        def __init__(self, client: mcpsync.Client) -> None:
            self.client = client

        def list_tools(self, **kwargs: Any) -> list[types.Tool]:
            loose = types.Tool("loose", {"properties": {"word": {"type": "string"}}})
            return [*self.client.list_tools(**kwargs), loose, types.Tool("bare", {})]

        def call_tool(self, name: str, arguments: Any, **kwargs: Any) -> types.CallToolResult:
            if name in ("loose", "bare"):
                return types.CallToolResult([types.TextContent(f"{name} got {arguments}")])
            return self.client.call_tool(name, arguments, **kwargs)

    with mcpsync.Client.stdio(tools_server) as client:
        source = Loose(client)
        either = next(d for d in anthropic_tools(source) if d["name"] == "either")
        assert either["input_schema"] == {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        }
        assert all(d["strict"] is False for d in openai_tools(source, api="responses"))
        for api in LOOPS:
            llm = scripted([("either", {"a": "x"}), ("loose", {"word": "w"}), ("bare", {})])
            answer, _ = LOOPS[api](llm, source)
            assert (
                answer
                == "Final answer: either ran with {\"a\": \"x\"} | loose got {'word': 'w'} | bare got {}"
            )
            assert llm.rejections == []


def test_object_schema_leaves_its_input_alone() -> None:
    schema = {"type": "object", "allOf": [{"properties": {"a": {}}, "required": ["a"]}], "enum": [1]}
    assert object_schema(schema) == {"type": "object", "properties": {"a": {}}, "required": ["a"]}
    assert "allOf" in schema and "enum" in schema
    assert object_schema(None) == {"type": "object", "properties": {}}
    assert object_schema({"type": ["object", "null"], "properties": [], "required": "x"}) == {
        "type": "object",
        "properties": {},
    }


@pytest.mark.parametrize("api", LOOPS)
def test_images_and_other_content_reach_the_model(
    api: str, scripted: Any, tools_server: list[str], sdk_server: list[str]
) -> None:
    llm = scripted([("pictures", {}), ("media", {}), ("add", {"a": 1, "b": 2})])
    with ClientGroup(
        {"t": mcpsync.Client.stdio(tools_server), "s": mcpsync.Client.stdio(sdk_server)}
    ) as group:
        answer, messages = LOOPS[api](llm, group)
    assert llm.rejections == []
    # pictures: one PNG shown, the SVG described; media: its PNG, audio and resources described.
    assert answer.endswith("(+2 images)")
    assert "[an image of type image/svg+xml, which cannot be shown]" in answer
    assert "[audio (audio/wav), which cannot be played here]" in answer
    assert "[resource note-1: memo://note/1 (text/plain)]" in answer
    assert "[resource memo://note/2]\nnote 2" in answer
    assert "[binary resource memo://blob/1 (application/octet-stream), not shown]" in answer
    # add returns text and structured content: the text is what the model gets.
    assert answer.split(" | ")[-1].startswith("3")
    if api == "chat":
        # Tool messages carry text only: the images follow in one user message.
        assert [m.get("role") for m in messages[-4:] if isinstance(m, dict)] == [
            "tool",
            "tool",
            "tool",
            "user",
        ]


# -- run_tool_calls itself ------------------------------------------------------------


def test_calls_run_concurrently(scripted: Any, tools_server: list[str]) -> None:
    """`meet` succeeds only when all three calls are in flight at once."""
    llm = scripted([("meet", {"n": 3})] * 3)
    with mcpsync.Client.stdio(tools_server) as client:
        answer, _ = chat_loop(llm, client)
    assert answer == "Final answer: met 3 | met 3 | met 3"


def test_timeout_bounds_every_call(scripted: Any) -> None:
    llm = scripted([("countdown", {"n": 100, "delay": 0.2}), ("echo", {"text": "quick"})])
    with mcpsync.Client.stdio(DEMO) as client:
        client.list_tools()  # connected before the clock starts
        with _openai(llm) as oc:
            resp = oc.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], tools=openai_tools(client)
            )
        started = time.monotonic()
        results = run_tool_calls(client, resp, timeout=1.0)
        elapsed = time.monotonic() - started
    assert elapsed < 3.0
    assert results[0]["content"].startswith("Error: the tool did not finish")
    assert results[1]["content"] == "quick"


def test_no_tool_calls_means_nothing_to_append(scripted: Any) -> None:
    llm = scripted()
    with mcpsync.Client.stdio(DEMO) as client:
        answer, messages = chat_loop(llm, client, question="just talk")
        assert answer == "Final answer: just talk"
        assert len(messages) == 1


def test_dicts_work_like_sdk_objects(scripted: Any) -> None:
    llm = scripted([("echo", {"text": "from a dict"})])
    with mcpsync.Client.stdio(DEMO) as client, _openai(llm) as oc:
        resp = oc.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], tools=openai_tools(client)
        )
        from_object = run_tool_calls(client, resp)
        from_dict = run_tool_calls(client, resp.model_dump())
        from_message = run_tool_calls(client, resp.choices[0].message.model_dump())
    assert from_object == from_dict == from_message
    assert from_object[0]["content"] == "from a dict"


def test_custom_tool_calls_never_reach_an_mcp_tool() -> None:
    """A chat message (multi-part content, as a dict) with a custom tool call and a function call."""
    from mcpsync.testing import FakeServer

    server = FakeServer("s")
    ran: list[str] = []

    @server.tool()
    def custom(x: str = "") -> str:
        ran.append(x)
        return "ran"

    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "calling"}],
        "tool_calls": [
            {"id": "c1", "type": "custom", "custom": {"name": "custom", "input": "x"}},
            {"id": "c2", "type": "function", "function": {"name": "custom", "arguments": '{"x": "y"}'}},
        ],
    }
    with server.client() as client:
        results = run_tool_calls(client, message)
    assert results == [
        {"role": "tool", "tool_call_id": "c1", "content": "Error: there is no tool named 'custom:custom'"},
        {"role": "tool", "tool_call_id": "c2", "content": "ran"},
    ]
    assert ran == ["y"]


@pytest.mark.parametrize(
    "response, message",
    [
        (42, "not an OpenAI chat completion"),
        ({"choices": []}, "non-empty list"),
        ({"choices": [{"finish_reason": "stop"}]}, "no 'message'"),
        ({"choices": [{"message": {"role": "assistant", "tool_calls": "x"}}]}, "must be a list"),
        ({"object": "response", "output": {}}, "must be a list"),
        ({"type": "message", "role": "assistant", "content": "x"}, "must be a list"),
        (
            {
                "choices": [
                    {"message": {"role": "assistant", "tool_calls": [{"function": {"name": "echo"}}]}}
                ]
            },
            "no id",
        ),
        ({"type": "message", "content": [{"type": "tool_use", "id": "t1", "input": {}}]}, "has no name"),
    ],
)
def test_malformed_provider_responses_raise_a_typed_error(response: Any, message: str) -> None:
    from mcpsync.testing import FakeServer

    with FakeServer("empty").client() as client:
        with pytest.raises(ProviderResponseError, match=message) as info:
            run_tool_calls(client, response)
    assert isinstance(info.value, mcpsync.McpError)


def test_a_server_error_becomes_an_error_result(sdk_server: list[str]) -> None:
    """A JSON-RPC error (here: an unknown tool the server refuses) is a result, not an exception."""
    response = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "nonexistent", "input": {}}],
    }

    class Lying:  # lists a tool the server does not have
        def __init__(self, client: mcpsync.Client) -> None:
            self.client = client

        def list_tools(self, **kwargs: Any) -> list[types.Tool]:
            return [types.Tool("nonexistent", {"type": "object"})]

        def call_tool(self, *args: Any, **kwargs: Any) -> types.CallToolResult:
            return self.client.call_tool(*args, **kwargs)

    with mcpsync.Client.stdio(sdk_server) as client:
        [message] = run_tool_calls(Lying(client), response)
    [block] = message["content"]
    assert block["is_error"] is True and block["tool_use_id"] == "t1"
    assert block["content"][0]["text"].startswith("the tool call failed: InvalidParams:")


# -- sampling handlers ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sampling_handlers(provider: str, mode: str, scripted: Any, sdk_server: list[str]) -> None:
    llm = scripted([("weather", {"city": "Paris"})])
    llm_client = _openai(llm) if provider == "openai" else _anthropic(llm)
    make = openai_sampling_handler if provider == "openai" else anthropic_sampling_handler
    handler = make(llm_client, model="sampler-1", system_prompt="keep")
    with llm_client, mcpsync.Client.stdio(sdk_server, sampling_handler=handler, mode=mode) as client:
        # With tools, the scripted model asks for the weather tool: a tool-use answer.
        with_tools = client.call_tool("sample", {"prompt": "weather?", "with_tools": True})
        assert with_tools.is_error is not True, with_tools.text
        assert with_tools.structured_content["stopReason"] == "toolUse"
        content = with_tools.structured_content["content"]
        use = content if isinstance(content, dict) else content[0]
        assert (use["type"], use["name"], use["input"]) == ("tool_use", "weather", {"city": "Paris"})
        # Without tools the script has no turn for a fresh conversation... it is turn 0 again,
        # so ask with a script that has none left: a plain answer.
        llm.turns = []
        plain = client.call_tool("sample", {"prompt": "What is up?"})
        assert plain.text == "sampled by sampler-1"
        assert plain.structured_content["content"] == {
            "type": "text",
            "text": "Final answer: What is up?",
        }
        assert plain.structured_content["stopReason"] == "endTurn"
    body = list(llm.bodies("/chat/completions" if provider == "openai" else "/messages"))[-1]
    assert body["model"] == "sampler-1"
    if provider == "openai":
        assert body["max_completion_tokens"] == 64
        assert body["messages"][0] == {"role": "system", "content": "be brief"}
    else:
        assert body["max_tokens"] == 64 and body["system"] == "be brief"
    assert llm.rejections == []


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sampling_handler_maps_tool_history(provider: str, scripted: Any) -> None:
    """A conversation with a tool use and its result goes to the provider in its own shape."""
    llm = scripted()
    llm_client = _openai(llm) if provider == "openai" else _anthropic(llm)
    make = openai_sampling_handler if provider == "openai" else anthropic_sampling_handler
    params = types.CreateMessageRequestParams(
        [
            types.SamplingMessage("user", types.TextContent("weather in Paris?")),
            types.SamplingMessage(
                "assistant", [types.ToolUseContent("u1", "get.weather", {"city": "Paris"})]
            ),
            types.SamplingMessage(
                "user", [types.ToolResultContent("u1", [types.TextContent("sunny")], is_error=False)]
            ),
        ],
        max_tokens=50,
        tools=[
            types.Tool("get.weather", {"type": "object", "properties": {"city": {"type": "string"}}})
        ],
    )
    with llm_client:
        result = make(llm_client, model="m")(params)
    assert result.content == types.TextContent("Final answer: sunny")
    assert result.model == "m"
    assert llm.rejections == []


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sampling_limits_what_a_server_asks(provider: str, scripted: Any, sdk_server: list[str]) -> None:
    """A server's system prompt and token limit reach the provider only as the user allows."""
    llm = scripted()
    llm_client = _openai(llm) if provider == "openai" else _anthropic(llm)
    make = openai_sampling_handler if provider == "openai" else anthropic_sampling_handler
    path = "/chat/completions" if provider == "openai" else "/messages"
    seen: list[types.CreateMessageRequestParams] = []

    def approve(request: types.CreateMessageRequestParams) -> Any:
        seen.append(request)
        text = request.messages[0].content.text  # type: ignore[union-attr]
        if text == "refuse me":
            return False
        if text == "edit me":
            return attrs.evolve(request, messages=[types.SamplingMessage("user", types.TextContent("edited"))])
        return True

    def sent() -> dict[str, Any]:
        return list(llm.bodies(path))[-1]

    with llm_client, mcpsync.Client.stdio(sdk_server, mode="legacy", sampling_handler=make(
            llm_client, model="m", approve=approve, max_tokens=16)) as client, mcpsync.Client.stdio(
            sdk_server, mode="legacy", sampling_handler=make(
                llm_client, model="m", system_prompt=lambda text: f"Server says: {text}")) as second:
        assert client.call_tool("sample", {"prompt": "hi"}).text == "sampled by m"
        body = sent()
        # The SDK server asks for 64 tokens with the system prompt "be brief": clamped, dropped.
        assert body.get("max_completion_tokens", body.get("max_tokens")) == 16
        assert "system" not in body and all(m["role"] != "system" for m in body["messages"])
        assert seen[-1].system_prompt == "be brief" and seen[-1].max_tokens == 64  # approve saw it all
        with pytest.raises(mcpsync.ServerError, match="User rejected sampling request"):  # the server passes it on
            client.call_tool("sample", {"prompt": "refuse me"})
        assert len(list(llm.bodies(path))) == 1  # nothing went to the provider
        assert client.call_tool("sample", {"prompt": "edit me"}).structured_content["content"]["text"] \
            == "Final answer: edited"
        second.call_tool("sample", {"prompt": "hi"})
        body = sent()
        system = body.get("system") or body["messages"][0]["content"]
        assert system == "Server says: be brief"
        assert body.get("max_completion_tokens", body.get("max_tokens")) == 64  # under the default cap
    with pytest.raises(ValueError, match="system_prompt"):
        make(llm_client, model="m", system_prompt="sometimes")
