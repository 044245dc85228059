"""Protocol types: lossless round trips over the spec's examples, unions, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schema_util import HANDSHAKE_VERSIONS, SPEC_DIR, definitions

from mcpsync import types
from mcpsync.exceptions import ProtocolError, ToolError

pytestmark = pytest.mark.timeout(60)

EXAMPLES = SPEC_DIR / "2026-07-28" / "examples"
HANDSHAKE_DEFS = frozenset().union(*(definitions(v) for v in HANDSHAKE_VERSIONS))

# Example directories whose type we deliberately do not model, and why. Any
# other directory must map to a class, so a new example cannot be skipped silently.
NOT_MODELLED = {
    # Elicitation's restricted JSON Schema: ``requested_schema`` is a plain dict.
    "BooleanSchema": "schema dict",
    "NumberSchema": "schema dict",
    "StringSchema": "schema dict",
    "TitledMultiSelectEnumSchema": "schema dict",
    "TitledSingleSelectEnumSchema": "schema dict",
    "UntitledMultiSelectEnumSchema": "schema dict",
    "UntitledSingleSelectEnumSchema": "schema dict",
    # JSON-RPC error envelopes belong to the session, not to these types.
    "HeaderMismatchError": "JSON-RPC error",
    "InternalError": "JSON-RPC error",
    "InvalidParamsError": "JSON-RPC error",
    "MethodNotFoundError": "JSON-RPC error",
    "MissingRequiredClientCapabilityError": "JSON-RPC error",
    "ParseError": "JSON-RPC error",
    "UnsupportedProtocolVersionError": "JSON-RPC error",
    # MRTR responses: each value's type follows from the matching input request's method.
    "InputResponses": "map of results",
}

# Envelopes whose params are a generic class.
PARAMS_CLASS: dict[str, type[Any]] = {
    "ListPromptsRequest": types.PaginatedRequestParams,
    "ListResourcesRequest": types.PaginatedRequestParams,
    "ListResourceTemplatesRequest": types.PaginatedRequestParams,
    "ListToolsRequest": types.PaginatedRequestParams,
    "ListRootsRequest": types.RequestParams,
    "PromptListChangedNotification": types.NotificationParams,
    "ResourceListChangedNotification": types.NotificationParams,
    "ToolListChangedNotification": types.NotificationParams,
    "DiscoverRequest": types.RequestParams,
}

# Modern-era results with no fields of their own beyond ``_meta`` and ``resultType``.
RESULT_CLASS: dict[str, type[Any]] = {
    "SubscriptionsListenResult": types.EmptyResult,
    "SubscriptionsListenResultResponse": types.EmptyResult,
}


def _target(name: str, message: dict[str, Any]) -> tuple[Any, Any] | None:
    """Map an example (by its type's name) to (python type, the part it describes)."""
    if name in RESULT_CLASS:
        return RESULT_CLASS[name], message.get("result", message)
    if name in types.__all__:
        return getattr(types, name), message
    if name.endswith("ResultResponse"):
        base = name[: -len("Response")]
        if base in types.__all__:
            return getattr(types, base), message["result"]
    if name in PARAMS_CLASS:
        return PARAMS_CLASS[name], message.get("params")
    for suffix in ("Request", "Notification"):
        if name.endswith(suffix) and name + "Params" in types.__all__:
            return getattr(types, name + "Params"), message["params"]
    return None


def _examples() -> list[Any]:
    cases = []
    for directory in sorted(EXAMPLES.iterdir()):
        name = directory.name
        base = name[: -len("Response")] if name.endswith("ResultResponse") else name
        if name in NOT_MODELLED or name == "InputRequests":
            continue  # InputRequests is a map: see test_input_requests_map below
        for path in sorted(directory.glob("*.json")):
            cases.append(pytest.param(name, path, id=f"{name}/{path.stem}"))
    return cases


EXAMPLE_CASES = _examples()


def test_input_requests_map() -> None:
    for path in sorted((EXAMPLES / "InputRequests").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for value in data.values():
            assert types.to_wire(types.from_wire(types.InputRequest, value)) == value


def test_examples_found() -> None:
    # Guards the data-driven test below against an empty or misplaced data dir.
    assert len(EXAMPLE_CASES) >= 90


@pytest.mark.parametrize(("name", "path"), EXAMPLE_CASES)
def test_example_round_trip(name: str, path: Path) -> None:
    message = json.loads(path.read_text(encoding="utf-8"))
    target = _target(name, message)
    assert target is not None, f"no python type for handshake-era example {name}"
    cls, data = target
    if data is None:
        data = {}  # e.g. roots/list: params are optional; an empty object must round-trip
    obj = types.from_wire(cls, data)
    assert types.to_wire(obj) == data
    # A second trip through JSON text must give the same object.
    assert types.from_wire(cls, json.loads(json.dumps(types.to_wire(obj)))) == obj


def test_modern_keys_survive_in_extra() -> None:
    data = json.loads(
        (EXAMPLES / "CallToolResult" / "result-with-structured-content.json").read_text()
    )
    result = types.from_wire(types.CallToolResult, data)
    assert result.extra == {"resultType": "complete"}
    assert result.structured_content == {
        "temperature": 22.5,
        "conditions": "Partly cloudy",
        "humidity": 65,
    }
    assert types.to_wire(result)["resultType"] == "complete"


def test_wire_names_and_omitted_none() -> None:
    tool = types.Tool(
        "add",
        {"type": "object"},
        output_schema={"type": "object"},
        annotations=types.ToolAnnotations(read_only_hint=True),
        meta={"k": 1},
    )
    assert types.to_wire(tool) == {
        "name": "add",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
        "_meta": {"k": 1},
    }
    assert types.to_wire(types.Implementation("n", "1.0", website_url="https://x")) == {
        "name": "n",
        "version": "1.0",
        "websiteUrl": "https://x",
    }


def test_fixed_tags_are_emitted_and_not_passed() -> None:
    assert types.to_wire(types.TextContent("hi")) == {"type": "text", "text": "hi"}
    assert types.to_wire(types.PromptReference("p")) == {"type": "ref/prompt", "name": "p"}
    assert types.to_wire(types.ResourceTemplateReference("file:///{p}")) == {
        "type": "ref/resource",
        "uri": "file:///{p}",
    }
    assert types.to_wire(types.ElicitRequestURLParams("m", "https://x", "e1"))["mode"] == "url"
    with pytest.raises(TypeError):
        types.TextContent("hi", type="image")  # type: ignore[call-arg]


def test_required_lists_are_always_sent() -> None:
    assert types.to_wire(types.CallToolResult()) == {"content": []}
    assert types.to_wire(types.ListRootsResult()) == {"roots": []}
    assert types.from_wire(types.CallToolResult, {}).content == []


def test_extra_round_trip_on_nested_objects() -> None:
    data = {
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "tools": {"listChanged": True, "future": 1},
            "logging": {},
            "newThing": {"a": [1]},
        },
        "serverInfo": {"name": "s", "version": "1", "vendorField": True},
        "someNewKey": None,
    }
    result = types.from_wire(types.InitializeResult, data)
    assert result.capabilities.tools is not None
    assert result.capabilities.tools.list_changed is True
    assert result.capabilities.tools.extra == {"future": 1}
    assert result.capabilities.extra == {"newThing": {"a": [1]}}
    assert result.server_info.extra == {"vendorField": True}
    assert result.extra == {"someNewKey": None}
    assert result.capabilities.resources is None
    assert result.capabilities.prompts is None
    assert result.capabilities.completions is None
    assert result.capabilities.experimental is None
    assert result.capabilities.logging == {}
    assert types.to_wire(result) == data


def test_unknown_content_type_round_trips() -> None:
    block = {"type": "video", "uri": "https://v", "_meta": {"x": 1}}
    result = types.from_wire(
        types.CallToolResult, {"content": [{"type": "text", "text": "a"}, block]}
    )
    unknown = result.content[1]
    assert isinstance(unknown, types.UnknownContent)
    assert unknown.type == "video"
    assert unknown.extra == {"uri": "https://v", "_meta": {"x": 1}}
    assert types.to_wire(result)["content"][1] == block
    # Unknown blocks inside sampling messages and tool results too.
    msg = types.from_wire(types.SamplingMessage, {"role": "user", "content": block})
    assert isinstance(msg.content, types.UnknownContent)
    assert types.to_wire(msg) == {"role": "user", "content": block}


def test_content_union_dispatch() -> None:
    blocks = [
        {"type": "text", "text": "t"},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a", "name": "a"},
        {"type": "resource", "resource": {"uri": "file:///a", "text": "x"}},
        {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA=="}},
    ]
    result = types.from_wire(types.CallToolResult, {"content": blocks})
    assert [type(b) for b in result.content] == [
        types.TextContent,
        types.ImageContent,
        types.AudioContent,
        types.ResourceLink,
        types.EmbeddedResource,
        types.EmbeddedResource,
    ]
    embedded = result.content[5]
    assert isinstance(embedded, types.EmbeddedResource)
    assert isinstance(embedded.resource, types.BlobResourceContents)
    assert types.to_wire(result) == {"content": blocks}


def test_sampling_content_keeps_its_shape() -> None:
    single = {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}
    many = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "1", "name": "f", "input": {}}],
        "model": "m",
        "stopReason": "toolUse",
    }
    one = types.from_wire(types.CreateMessageResult, single)
    assert isinstance(one.content, types.TextContent)
    lst = types.from_wire(types.CreateMessageResult, many)
    assert isinstance(lst.content, list)
    assert isinstance(lst.content[0], types.ToolUseContent)
    assert types.to_wire(one) == single
    assert types.to_wire(lst) == many
    built = types.CreateMessageResult(types.TextContent("x"), model="m")
    assert types.to_wire(built) == single


def test_elicit_params_by_mode() -> None:
    legacy = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
    form = types.from_wire(types.ElicitRequestParams, legacy)
    assert isinstance(form, types.ElicitRequestFormParams)
    assert form.mode is None
    assert types.to_wire(form) == legacy
    url = types.from_wire(
        types.ElicitRequestParams,
        {"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"},
    )
    assert isinstance(url, types.ElicitRequestURLParams)
    assert url.elicitation_id == "e"
    with pytest.raises(ProtocolError, match="unknown mode"):
        types.from_wire(types.ElicitRequestParams, {"mode": "telepathy", "message": "m"})


def test_call_tool_result_conveniences() -> None:
    result = types.CallToolResult(
        [types.TextContent("a"), types.ImageContent("AA==", "image/png"), types.TextContent("b")]
    )
    assert result.text == "a\nb"
    result.raise_for_error()  # not an error: no exception
    failed = types.CallToolResult([types.TextContent("boom")], is_error=True)
    with pytest.raises(ToolError, match="boom") as info:
        failed.raise_for_error()
    assert info.value.result is failed
    with pytest.raises(ToolError):
        types.CallToolResult(is_error=True).raise_for_error()


def test_numbers_keep_their_json_type() -> None:
    data = {"progressToken": "t", "progress": 1, "total": 2.5}
    params = types.from_wire(types.ProgressNotificationParams, data)
    assert types.to_wire(params) == data
    assert isinstance(types.to_wire(params)["progress"], int)


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (types.TextContent, {"type": "text"}),  # missing required
        (types.TextContent, {"type": "text", "text": 5}),  # wrong type
        (types.Tool, {"name": "t"}),
        (types.Tool, {"name": "t", "inputSchema": "object"}),
        (types.Tool, {"name": 1, "inputSchema": {}}),
        (types.CallToolResult, {"content": "text"}),  # string is not a list
        (types.CallToolResult, {"content": [{"text": "no type"}]}),
        (types.CallToolResult, {"content": [{"type": 7}]}),
        (types.CallToolResult, {"isError": "yes"}),
        (types.CallToolResult, []),
        (types.CallToolResult, None),
        (types.ServerCapabilities, ["tools"]),
        (types.ServerCapabilities, {"resources": {"subscribe": "true"}}),
        (types.Resource, {"uri": "u", "name": "n", "size": "12"}),
        (types.Resource, {"uri": "u", "name": "n", "size": True}),
        (types.ReadResourceResult, {"contents": [{"uri": "u"}]}),  # neither text nor blob
        (types.ProgressNotificationParams, {"progressToken": None, "progress": 1}),
        (types.ProgressNotificationParams, {"progressToken": 1, "progress": "50%"}),
        (types.LoggingMessageNotificationParams, {"level": "loud", "data": "x"}),
        (types.CompleteResult, {"completion": {"values": [1, 2]}}),
        (types.CompleteRequestParams, {"ref": {"type": "ref/x"}, "argument": {}}),
        (types.Implementation, {"name": "n"}),
        (types.CreateMessageResult, {"role": "robot", "content": {}, "model": "m"}),
    ],
)
def test_invalid_input_raises_protocol_error(cls: Any, data: Any) -> None:
    with pytest.raises(ProtocolError) as info:
        types.from_wire(cls, data)
    assert info.value.__cause__ is not None
    assert cls.__name__ in str(info.value)


def test_error_message_is_truncated() -> None:
    data = {"type": "text", "text": 1, "padding": "x" * 10_000}
    with pytest.raises(ProtocolError) as info:
        types.from_wire(types.TextContent, data)
    assert len(str(info.value)) < 600


def test_every_exported_class_has_a_keyword_only_extra_shown_last() -> None:
    # ``extra`` is declared once, on the base; the repr still shows it after the class's own fields.
    classes = [getattr(types, n) for n in types.__all__ if attrs.has(getattr(types, n))]
    assert len(classes) > 50
    for cls in classes:
        fields = attrs.fields_dict(cls)
        assert fields["extra"].kw_only and ("meta" not in fields or fields["meta"].kw_only), cls
    assert sum("meta" in attrs.fields_dict(cls) for cls in classes) > 50
    assert repr(types.TextContent("hi", extra={"k": 1})).endswith("meta=None, extra={'k': 1})")
    assert types.to_wire(types.TextContent("hi", meta={"m": 1})) == {"type": "text", "text": "hi", "_meta": {"m": 1}}


def test_all_is_complete() -> None:
    for name in types.__all__:
        assert hasattr(types, name), name
    public = {n for n in dir(types) if not n.startswith("_")}
    modules = {"content", "elicitation", "lifecycle", "prompts", "resources", "completion"}
    modules |= {"sampling", "tools", "annotations", "modern", "protocol", "messages", "roots", "logging", "progress", "tasks"}
    modules |= {"skills"}
    modules |= {"extensions"}
    modules |= {"apps"}
    assert public - set(types.__all__) - modules == set()


# --- property-based: any extra keys survive a round trip -------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(), kids, max_size=3),
    max_leaves=8,
)
_extra_keys = st.dictionaries(
    st.text(min_size=1).filter(lambda k: k not in {"type", "text", "annotations", "_meta"}),
    _json,
    max_size=4,
)


@settings(max_examples=100, deadline=None)
@given(extra=_extra_keys, text=st.text(), meta=st.none() | st.dictionaries(st.text(), _json))
def test_text_content_round_trip_property(
    extra: dict[str, Any], text: str, meta: dict[str, Any] | None
) -> None:
    data: dict[str, Any] = {"type": "text", "text": text, **extra}
    if meta is not None:
        data["_meta"] = meta
    wrapped = {"content": [data], "isError": False}
    obj = types.from_wire(types.CallToolResult, wrapped)
    assert types.to_wire(obj) == wrapped


@settings(max_examples=100, deadline=None)
@given(tag=st.text().filter(lambda t: t not in {"text", "image", "audio", "resource"}
                            and t != "resource_link"), extra=_extra_keys)
def test_unknown_tag_property(tag: str, extra: dict[str, Any]) -> None:
    data = {**extra, "type": tag}
    obj = types.from_wire(types.CallToolResult, {"content": [data]})
    assert obj.content == [types.UnknownContent(tag, extra={k: v for k, v in data.items()
                                                            if k != "type"})]
    assert types.to_wire(obj) == {"content": [data]}


def test_lazy_export_table_matches_every_submodule() -> None:
    # mcpsync.types loads submodules on first use of a name; a class missing
    # from the table would silently be unreachable as types.X.
    import importlib

    for module_name, names in types._EXPORTS.items():
        module = importlib.import_module(f"mcpsync.types.{module_name}")
        assert set(names) == set(module.__all__), module_name


def test_base_annotations_evaluate_even_when_type_checking_is_set() -> None:
    # Sphinx's autodoc imports modules with typing.TYPE_CHECKING set; cattrs then
    # resolves every annotation in the MRO, so the base's must evaluate too.
    import inspect
    import typing

    from mcpsync.types import _base

    source = inspect.getsource(_base).replace("if TYPE_CHECKING:", "if True:")
    namespace: dict[str, Any] = {"__name__": "mcpsync.types._base_checked"}
    exec(compile(source, "_base_checked", "exec"), namespace)
    assert "extra" in typing.get_type_hints(namespace["WireObject"], globalns=namespace)


# -- the shapes of CallToolResult that call_tool meets --------------------------------------


FAST_SHAPES = [
    {},
    {"content": []},
    {"content": [{"type": "text", "text": "hi"}]},
    {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b", "_meta": {"k": 1}}]},
    {"content": [{"type": "text", "text": "x"}], "isError": True, "_meta": {"m": 2}},
    {"content": [{"type": "text", "text": "x"}], "structuredContent": {"sum": 3}, "isError": False},
    {"content": [{"type": "text", "text": "x"}], "structuredContent": [1, 2]},
    {"content": [{"type": "text", "text": "x"}], "resultType": "complete", "_meta": {"m": 1}},
]

SLOW_SHAPES = [
    # Converter territory: other blocks, annotations, unknown keys (kept in extra).
    {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]},
    {"content": [{"type": "text", "text": "x", "annotations": {"priority": 0.5}}]},
    {"content": [{"type": "text", "text": "x", "future": 1}]},
    {"content": [{"type": "text", "text": "x"}], "future": {"a": 1}},
    {"content": [{"type": "text", "text": "x"}, {"type": "resource_link", "uri": "u", "name": "n"}]},
    {"content": [{"type": "text", "text": "x"}], "isError": None},
    {"content": [{"type": "text", "text": "x"}], "structuredContent": None},
]

BAD_SHAPES = [
    [],
    "text",
    {"content": "hi"},
    {"content": None},
    {"content": [{"type": "text", "text": 5}]},
    {"content": [{"type": "text"}]},
    {"content": [{"text": "x"}]},
    {"content": ["x"]},
    {"content": [{"type": "text", "text": "x", "_meta": "m"}]},
    {"content": [], "isError": "yes"},
    {"content": [], "isError": 1},
    {"content": [], "_meta": []},
    {"content": [], "_meta": None},
    {"content": [{"type": "text", "text": "x", "_meta": None}]},
]


def _expected_call_tool_result(raw: dict[str, Any]) -> types.CallToolResult:
    """The CallToolResult *raw* stands for, built field by field (not with the converter under test)."""

    def block(data: dict[str, Any]) -> Any:
        fields = {"text": ("text",), "image": ("data", "mimeType"), "resource_link": ("uri", "name")}[data["type"]]
        kwargs: dict[str, Any] = {"mime_type" if f == "mimeType" else f: data[f] for f in fields}
        cls = {"text": types.TextContent, "image": types.ImageContent, "resource_link": types.ResourceLink}
        annotations = data.get("annotations")
        return cls[data["type"]](
            **kwargs,
            **({"annotations": types.Annotations(priority=annotations["priority"])} if annotations else {}),
            meta=data.get("_meta"),
            extra={k: v for k, v in data.items() if k not in {"type", "annotations", "_meta", *fields}},
        )

    known = {"content", "structuredContent", "isError", "_meta"}
    return types.CallToolResult(
        content=[block(b) for b in raw.get("content", [])],
        structured_content=raw.get("structuredContent"),
        is_error=raw.get("isError"),
        meta=raw.get("_meta"),
        extra={k: v for k, v in raw.items() if k not in known},
    )


@pytest.mark.parametrize("raw", FAST_SHAPES + SLOW_SHAPES, ids=repr)
def test_call_tool_results_round_trip(raw: dict[str, Any]) -> None:
    # What call_tool builds its result with (the converter, since the hand-built fast path went).
    from mcpsync.types.tools import call_tool_result_from_wire

    result = call_tool_result_from_wire(raw)
    assert type(result) is types.CallToolResult and result == _expected_call_tool_result(raw)
    # Lossless, but for nulls of optional members; content is always sent.
    assert types.to_wire(result) == {"content": [], **{k: v for k, v in raw.items() if v is not None}}
    assert result.text == "\n".join(b["text"] for b in raw.get("content", []) if b.get("type") == "text")


@pytest.mark.parametrize("raw", BAD_SHAPES, ids=repr)
def test_malformed_call_tool_results_are_protocol_errors(raw: Any) -> None:
    from mcpsync.types.tools import call_tool_result_from_wire

    with pytest.raises(ProtocolError) as info:
        call_tool_result_from_wire(raw)
    assert "CallToolResult" in str(info.value) and info.value.__cause__ is not None
