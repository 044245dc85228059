"""Python ↔ wire conversions for :class:`~mcpsync.testing.FakeServer`.

Type hints become JSON Schema (a tool's ``inputSchema``), arguments are
checked against that schema, and what a tool, resource or prompt function
returns becomes the wire result.  Plain dicts throughout; attrs objects from
:mod:`mcpsync.types` are accepted where a content block or message is.
"""

from __future__ import annotations

import base64
import enum
import inspect
import json
import re
import types
from typing import (
    Annotated,
    Any,
    Callable,
    Literal,
    Mapping,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

import attrs

from mcpsync.types.protocol import wire_name

__all__ = [
    "signature_schema",
    "schema_for",
    "check_arguments",
    "tool_result",
    "resource_contents",
    "prompt_messages",
    "UriTemplate",
    "to_wire",
]

#: Values of ``type`` that mark a dict as a content block.
CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})

_JSON_TYPES: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


def to_wire(value: Any) -> Any:
    """Turn an attrs object from :mod:`mcpsync.types` into its wire dict; other values unchanged."""
    if not attrs.has(type(value)):
        return value
    try:
        from mcpsync.types import to_wire as types_to_wire  # type: ignore[attr-defined,unused-ignore]
    except ImportError:  # mcpsync.types not importable: a camelCase asdict is close enough
        return {wire_name(k): v for k, v in attrs.asdict(value).items() if v is not None}
    return types_to_wire(value)




# -- type hints → JSON Schema ---------------------------------------------


def schema_for(hint: Any) -> dict[str, Any]:
    """JSON Schema for one type hint; ``{}`` (anything) for hints it cannot express."""
    if hint is inspect.Parameter.empty or hint is Any or isinstance(hint, str):
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        base = schema_for(args[0])
        text = next((a for a in args[1:] if isinstance(a, str)), None)
        return {**base, "description": text} if text else base
    if origin is Union or origin is types.UnionType:
        options = [a for a in args if a is not type(None)]
        inner = (
            schema_for(options[0])
            if len(options) == 1
            else {"anyOf": [schema_for(a) for a in options]}
        )
        return {"anyOf": [inner, {"type": "null"}]} if len(options) < len(args) else inner
    if origin is Literal:
        return _enum_schema(list(args))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([member.value for member in hint])
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    container = origin or hint
    if container in (list, tuple, set, frozenset):
        schema: dict[str, Any] = {"type": "array"}
        if args and not (container is tuple and (len(args) != 2 or args[1] is not Ellipsis)):
            schema["items"] = schema_for(args[0])
        return schema
    if container is dict or (isinstance(container, type) and issubclass(container, Mapping)):
        mapping: dict[str, Any] = {"type": "object"}
        if len(args) == 2:
            mapping["additionalProperties"] = schema_for(args[1])
        return mapping
    return {}


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": values}
    kinds = {_JSON_TYPES.get(type(v)) for v in values}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return get_type_hints(fn, include_extras=True)
    except Exception:  # e.g. a name imported only under TYPE_CHECKING: fall back to raw strings
        return dict(getattr(fn, "__annotations__", {}))


def _is_context(hint: Any) -> bool:
    from mcpsync.testing.server.context import ToolContext

    if isinstance(hint, str):
        return hint == "ToolContext" or hint.endswith(".ToolContext")
    return hint is ToolContext


def signature_schema(fn: Callable[..., Any]) -> tuple[dict[str, Any], str | None]:
    """Derive an ``inputSchema`` from *fn*'s parameters.

    :returns: the schema and the name of the :class:`~mcpsync.testing.ToolContext`
        parameter (excluded from the schema), or ``None``.
    """
    hints = _hints(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    ctx_name = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        hint = hints.get(param.name, param.annotation)
        if _is_context(hint):
            ctx_name = param.name
            continue
        prop = schema_for(hint)
        if param.default is param.empty:
            required.append(param.name)
        elif _json_safe(param.default):
            prop = {**prop, "default": param.default}
        properties[param.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema, ctx_name


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


# -- argument checking ------------------------------------------------------


def check_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """Check *arguments* against a derived ``inputSchema``; an error message or ``None``."""
    properties = schema.get("properties", {})
    missing = [name for name in schema.get("required", []) if name not in arguments]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    for name, value in arguments.items():
        if name not in properties:
            return f"unexpected argument: {name}"
        if not _matches(properties[name], value):
            return f"invalid value for argument {name!r}: {json.dumps(value)[:100]}"
    return None


def _matches(schema: Mapping[str, Any], value: Any) -> bool:
    if "enum" in schema and value not in schema["enum"]:
        return False
    if "anyOf" in schema:
        return any(_matches(option, value) for option in schema["anyOf"])
    kind = schema.get("type")
    if kind is None:
        return True
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = {
        "null": value is None,
        "boolean": isinstance(value, bool),
        "integer": is_number and float(value).is_integer(),
        "number": is_number,
        "string": isinstance(value, str),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }.get(kind, True)
    if ok and kind == "array" and "items" in schema:
        return all(_matches(schema["items"], item) for item in value)
    if ok and kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return all(_matches(schema["additionalProperties"], item) for item in value.values())
    return ok


# -- results ----------------------------------------------------------------


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _content_block(value: Any) -> dict[str, Any] | None:
    wire = to_wire(value)
    if isinstance(wire, dict) and wire.get("type") in CONTENT_TYPES:
        return wire
    return None


def tool_result(value: Any, output_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Turn what a tool returned into a ``CallToolResult`` dict.

    ``str`` → one text block; a content block (dict with a content ``type`` or
    attrs object) or a list of them → passed through; an attrs
    ``CallToolResult`` → itself; with *output_schema*, the value (wrapped as
    ``{"result": value}`` unless it is a dict) → ``structuredContent`` plus the
    same as JSON text; anything else → JSON text.
    """
    wire = to_wire(value)
    if attrs.has(type(value)) and isinstance(wire, dict) and isinstance(wire.get("content"), list):
        return dict(wire)
    if output_schema is not None:
        structured = wire if isinstance(wire, dict) else {"result": wire}
        return {"content": [_text(json.dumps(structured))], "structuredContent": structured}
    if value is None:
        return {"content": []}
    if isinstance(value, str):
        return {"content": [_text(value)]}
    block = _content_block(value)
    if block is not None:
        return {"content": [block]}
    if isinstance(value, (list, tuple)) and value:
        blocks = [_content_block(item) for item in value]
        if all(b is not None for b in blocks):
            return {"content": blocks}
    return {"content": [_text(json.dumps(wire, default=str))]}


def resource_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """Turn what a resource function returned into ``ReadResourceResult.contents``."""
    items = value if isinstance(value, list) else [value]
    contents = []
    for item in items:
        entry: dict[str, Any]
        if isinstance(item, str):
            entry = {"uri": uri, "text": item}
        elif isinstance(item, (bytes, bytearray)):
            entry = {"uri": uri, "blob": base64.b64encode(bytes(item)).decode("ascii")}
        else:
            wire = to_wire(item)
            if not isinstance(wire, dict):
                raise TypeError(
                    f"a resource function must return str, bytes or dict, not {type(item).__name__}"
                )
            entry = {"uri": uri, **wire}
        if mime_type is not None:
            entry.setdefault("mimeType", mime_type)
        contents.append(entry)
    return contents


def prompt_messages(value: Any) -> list[dict[str, Any]]:
    """Turn what a prompt function returned into ``GetPromptResult.messages``.

    A ``str`` is one user message; a list may hold strings (user messages),
    ``(role, text)`` pairs, message dicts (``content`` may be a plain string)
    or attrs ``PromptMessage`` objects.
    """
    items = [value] if isinstance(value, str) else list(value)
    messages = []
    for item in items:
        if isinstance(item, str):
            messages.append({"role": "user", "content": _text(item)})
        elif isinstance(item, tuple) and len(item) == 2:
            messages.append(
                {
                    "role": item[0],
                    "content": _text(item[1]) if isinstance(item[1], str) else to_wire(item[1]),
                }
            )
        else:
            wire = to_wire(item)
            if not isinstance(wire, dict) or "role" not in wire:
                raise TypeError(
                    "a prompt message must be a str, a (role, text) pair or a message dict"
                )
            content = wire.get("content")
            messages.append(
                {
                    **wire,
                    "content": _text(content) if isinstance(content, str) else to_wire(content),
                }
            )
    return messages


class UriTemplate:
    """A small RFC 6570 matcher: ``{var}`` matches one path segment, ``{+var}`` anything.

    Example::

        UriTemplate("demo://greeting/{name}").match("demo://greeting/Ada")  # {"name": "Ada"}
    """

    _VAR = re.compile(r"\{([+#]?)([A-Za-z0-9_]+)\}")

    def __init__(self, template: str) -> None:
        self.template = template
        pattern, last = [], 0
        for found in self._VAR.finditer(template):
            pattern.append(re.escape(template[last : found.start()]))
            body = ".+" if found.group(1) else "[^/?#]+"
            pattern.append(f"(?P<{found.group(2)}>{body})")
            last = found.end()
        pattern.append(re.escape(template[last:]))
        self._regex = re.compile("".join(pattern))
        #: The variable names, in order.
        self.variables = [m.group(2) for m in self._VAR.finditer(template)]

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables if *uri* matches the whole template, else ``None``."""
        found = self._regex.fullmatch(uri)
        return found.groupdict() if found else None
