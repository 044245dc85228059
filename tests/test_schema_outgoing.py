"""What a client sends, built from :mod:`mcpsync.types`, validates against every handshake schema.

Each case builds a message the way the client does (``to_wire`` of the params or
result object inside a JSON-RPC envelope where the schema defines one) and
validates it against each handshake-era revision that has that definition and
the features the message uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from schema_util import HANDSHAKE_VERSIONS, definitions, validate_against

from mcpsync import types

pytestmark = pytest.mark.timeout(60)


def _request(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
    if params is not None:
        message["params"] = types.to_wire(params)
    return message


def _notification(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = types.to_wire(params)
    return message


def _initialize(version: str) -> dict[str, Any]:
    caps = types.ClientCapabilities(
        roots=types.RootsCapability(list_changed=True),
        sampling=types.SamplingCapability(),
        elicitation=types.ElicitationCapability(),
        experimental={"x-test": {}},
    )
    info = types.Implementation("mcpsync-tests", "1.0")
    return _request("initialize", types.InitializeRequestParams(version, caps, info))


def _initialize_full(version: str) -> dict[str, Any]:
    # Everything 2025-11-25 added: sampling tools/context, both elicitation modes, icons.
    caps = types.ClientCapabilities(
        roots=types.RootsCapability(list_changed=True),
        sampling=types.SamplingCapability(context={}, tools={}),
        elicitation=types.ElicitationCapability(form={}, url={}),
    )
    info = types.Implementation(
        "mcpsync-tests",
        "1.0",
        title="mcpsync tests",
        description="the test suite",
        website_url="https://example.com",
        icons=[types.Icon("https://example.com/i.png", mime_type="image/png", sizes=["48x48"])],
    )
    return _request("initialize", types.InitializeRequestParams(version, caps, info))


def _sampling_tool_use(_: str) -> dict[str, Any]:
    result = types.CreateMessageResult(
        [types.ToolUseContent("call-1", "get_weather", {"city": "Paris"})],
        model="test-model",
        stop_reason="toolUse",
    )
    return types.to_wire(result)


Builder = Callable[[str], Any]

#: (case id, schema definition, first revision the message is valid in, builder)
CASES: list[tuple[str, str, str, Builder]] = [
    ("initialize", "InitializeRequest", "2024-11-05", _initialize),
    ("initialize-2025-11-25", "InitializeRequest", "2025-11-25", _initialize_full),
    (
        "initialized",
        "InitializedNotification",
        "2024-11-05",
        lambda v: _notification("notifications/initialized"),
    ),
    ("ping", "PingRequest", "2024-11-05", lambda v: _request("ping")),
    (
        "list-tools",
        "ListToolsRequest",
        "2024-11-05",
        lambda v: _request("tools/list", types.PaginatedRequestParams(cursor="c2")),
    ),
    (
        "call-tool",
        "CallToolRequest",
        "2024-11-05",
        lambda v: _request(
            "tools/call",
            types.CallToolRequestParams("add", {"a": 1, "b": 2}, meta={"progressToken": 3}),
        ),
    ),
    (
        "call-tool-task",
        "CallToolRequest",
        "2025-11-25",
        lambda v: _request(
            "tools/call",
            types.CallToolRequestParams("slow", task=types.TaskMetadata(ttl=60000)),
        ),
    ),
    (
        "list-resources",
        "ListResourcesRequest",
        "2024-11-05",
        lambda v: _request("resources/list", types.PaginatedRequestParams()),
    ),
    (
        "list-resource-templates",
        "ListResourceTemplatesRequest",
        "2024-11-05",
        lambda v: _request("resources/templates/list"),
    ),
    (
        "read-resource",
        "ReadResourceRequest",
        "2024-11-05",
        lambda v: _request("resources/read", types.ReadResourceRequestParams("file:///a")),
    ),
    (
        "subscribe",
        "SubscribeRequest",
        "2024-11-05",
        lambda v: _request("resources/subscribe", types.SubscribeRequestParams("file:///a")),
    ),
    (
        "unsubscribe",
        "UnsubscribeRequest",
        "2024-11-05",
        lambda v: _request(
            "resources/unsubscribe", types.UnsubscribeRequestParams("file:///a")
        ),
    ),
    (
        "list-prompts",
        "ListPromptsRequest",
        "2024-11-05",
        lambda v: _request("prompts/list"),
    ),
    (
        "get-prompt",
        "GetPromptRequest",
        "2024-11-05",
        lambda v: _request(
            "prompts/get", types.GetPromptRequestParams("greet", {"name": "Ada"})
        ),
    ),
    (
        "complete-prompt",
        "CompleteRequest",
        "2024-11-05",
        lambda v: _request(
            "completion/complete",
            types.CompleteRequestParams(
                types.PromptReference("greet"), types.CompletionArgument("name", "A")
            ),
        ),
    ),
    (
        "complete-resource-context",
        "CompleteRequest",
        "2025-06-18",
        lambda v: _request(
            "completion/complete",
            types.CompleteRequestParams(
                types.ResourceTemplateReference("file:///{dir}/{name}"),
                types.CompletionArgument("name", "re"),
                context=types.CompletionContext({"dir": "src"}),
            ),
        ),
    ),
    (
        "set-level",
        "SetLevelRequest",
        "2024-11-05",
        lambda v: _request("logging/setLevel", types.SetLevelRequestParams("warning")),
    ),
    (
        "cancelled",
        "CancelledNotification",
        "2024-11-05",
        lambda v: _notification(
            "notifications/cancelled",
            types.CancelledNotificationParams(request_id=7, reason="timed out"),
        ),
    ),
    (
        "roots-list-changed",
        "RootsListChangedNotification",
        "2024-11-05",
        lambda v: _notification("notifications/roots/list_changed"),
    ),
    (
        "list-roots-result",
        "ListRootsResult",
        "2024-11-05",
        lambda v: types.to_wire(
            types.ListRootsResult([types.Root("file:///p", name="p"), types.Root("file:///q")])
        ),
    ),
    (
        "empty-roots-result",
        "ListRootsResult",
        "2024-11-05",
        lambda v: types.to_wire(types.ListRootsResult()),
    ),
    (
        "pong",
        "EmptyResult",
        "2024-11-05",
        lambda v: types.to_wire(types.EmptyResult()),
    ),
    (
        "sampling-text",
        "CreateMessageResult",
        "2024-11-05",
        lambda v: types.to_wire(
            types.CreateMessageResult(
                types.TextContent("Paris"), model="test-model", stop_reason="endTurn"
            )
        ),
    ),
    (
        "sampling-audio",
        "CreateMessageResult",
        "2025-03-26",
        lambda v: types.to_wire(
            types.CreateMessageResult(types.AudioContent("AA==", "audio/wav"), model="m")
        ),
    ),
    ("sampling-tool-use", "CreateMessageResult", "2025-11-25", _sampling_tool_use),
    (
        "elicit-accept",
        "ElicitResult",
        "2025-06-18",
        lambda v: types.to_wire(
            types.ElicitResult("accept", {"name": "Ada", "age": 36, "ok": True})
        ),
    ),
    (
        "elicit-decline",
        "ElicitResult",
        "2025-06-18",
        lambda v: types.to_wire(types.ElicitResult("decline")),
    ),
    (
        "elicit-cancel",
        "ElicitResult",
        "2025-06-18",
        lambda v: types.to_wire(types.ElicitResult("cancel")),
    ),
]


def _params() -> list[Any]:
    out = []
    for case_id, definition, since, builder in CASES:
        for version in HANDSHAKE_VERSIONS:
            if version < since:
                continue
            marks = []
            if definition not in definitions(version):
                marks.append(pytest.mark.skip(reason=f"{version} has no {definition}"))
            out.append(
                pytest.param(
                    version, definition, builder, id=f"{case_id}-{version}", marks=marks
                )
            )
    return out


@pytest.mark.parametrize(("version", "definition", "builder"), _params())
def test_outgoing_message_validates(version: str, definition: str, builder: Builder) -> None:
    validate_against(version, definition, builder(version))


def test_every_case_validates_somewhere() -> None:
    for case_id, definition, since, _ in CASES:
        assert any(
            definition in definitions(v) for v in HANDSHAKE_VERSIONS if v >= since
        ), case_id


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_validator_rejects_bad_messages(version: str) -> None:
    # The helper must be able to fail, or every test above would prove nothing.
    bad_call = _request("tools/call", types.CallToolRequestParams("add"))
    bad_call["params"]["name"] = 5
    with pytest.raises(jsonschema.ValidationError, match="CallToolRequest"):
        validate_against(version, "CallToolRequest", bad_call)
    roots = types.to_wire(types.ListRootsResult([types.Root("file:///p")]))
    del roots["roots"][0]["uri"]
    with pytest.raises(jsonschema.ValidationError):
        validate_against(version, "ListRootsResult", roots)
    with pytest.raises(KeyError):
        validate_against(version, "NoSuchDefinition", {})
