"""Python ↔ wire conversions for :class:`~mcpsync.testing.FakeServer`.

Type hints become JSON Schema (a tool's ``inputSchema``), arguments are
checked against that schema, and what a tool, resource or prompt function
returns becomes the wire result.  Plain dicts throughout; attrs objects from
:mod:`mcpsync.types` are accepted wherever a content block, contents or a
message is, and turned into wire dicts by the types' own converter.
"""

from __future__ import annotations

import base64
import enum
import inspect
import json
import re
import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import attrs

from mcpsync.testing.server.context import ToolContext


#: Values of ``type`` that mark a dict as a content block.
CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})

_JSON_TYPES: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _wire(value: Any) -> Any:
    """An attrs object from :mod:`mcpsync.types` as its wire dict; other values unchanged."""
    if attrs.has(type(value)):
        from mcpsync.types import to_wire  # lazily: the types load on first use

        return to_wire(value)
    return value


# -- type hints → JSON Schema ---------------------------------------------


def schema_for(hint: Any) -> dict[str, Any]:
    """JSON Schema for one type hint; ``{}`` (anything) for hints it cannot express."""
    if hint is inspect.Parameter.empty or hint is Any or isinstance(hint, str):
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        text = next((a for a in args[1:] if isinstance(a, str)), None)
        return {**schema_for(args[0]), **({"description": text} if text else {})}
    if origin is Union or origin is types.UnionType:
        options = [a for a in args if a is not type(None)]
        inner = schema_for(options[0]) if len(options) == 1 else {"anyOf": [schema_for(a) for a in options]}
        return {"anyOf": [inner, {"type": "null"}]} if len(options) < len(args) else inner
    if origin is Literal or (isinstance(hint, type) and issubclass(hint, enum.Enum)):
        values = list(args) if origin is Literal else [member.value for member in hint]
        kinds = {_JSON_TYPES.get(type(v)) for v in values}
        return {"enum": values, **({"type": kinds.pop()} if len(kinds) == 1 and None not in kinds else {})}
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    container = origin or hint
    if container in (list, tuple, set, frozenset):
        homogeneous = container is not tuple or (len(args) == 2 and args[1] is Ellipsis)
        return {"type": "array", **({"items": schema_for(args[0])} if args and homogeneous else {})}
    if container is dict or (isinstance(container, type) and issubclass(container, Mapping)):
        return {"type": "object", **({"additionalProperties": schema_for(args[1])} if len(args) == 2 else {})}
    return {}


def _is_context(hint: Any) -> bool:
    return hint == "ToolContext" or hint.endswith(".ToolContext") if isinstance(hint, str) else hint is ToolContext


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def signature_schema(fn: Callable[..., Any]) -> tuple[dict[str, Any], str | None]:
    """Derive an ``inputSchema`` from *fn*'s parameters.

    :returns: the schema and the name of the :class:`~mcpsync.testing.ToolContext`
        parameter (excluded from the schema), or ``None``.
    """
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception:  # e.g. a name imported only under TYPE_CHECKING: fall back to raw strings
        hints = dict(getattr(fn, "__annotations__", {}))
    properties: dict[str, Any] = {}
    required: list[str] = []
    ctx_name = None
    for param in inspect.signature(fn).parameters.values():
        hint = hints.get(param.name, param.annotation)
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if _is_context(hint):
            ctx_name = param.name
            continue
        properties[param.name] = schema_for(hint)
        if param.default is param.empty:
            required.append(param.name)
        elif _json_safe(param.default):
            properties[param.name]["default"] = param.default
    return {"type": "object", "properties": properties, **({"required": required} if required else {})}, ctx_name


# -- argument checking ------------------------------------------------------


def check_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """Check *arguments* against a derived ``inputSchema``; an error message or ``None``."""
    properties = schema.get("properties", {})
    if missing := [name for name in schema.get("required", []) if name not in arguments]:
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
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = {None: True, "null": value is None, "boolean": isinstance(value, bool), "number": is_number,
          "integer": is_number and float(value).is_integer(), "string": isinstance(value, str),
          "array": isinstance(value, list), "object": isinstance(value, dict)}.get(kind, True)
    if ok and kind == "array" and "items" in schema:
        return all(_matches(schema["items"], item) for item in value)
    if ok and kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return all(_matches(schema["additionalProperties"], item) for item in value.values())
    return ok


# -- results ----------------------------------------------------------------


def _text(text: Any) -> Any:
    """A text content block for a string; anything else as its wire form."""
    return {"type": "text", "text": text} if isinstance(text, str) else _wire(text)


def _content_block(value: Any) -> dict[str, Any] | None:
    wire = _wire(value)
    return wire if isinstance(wire, dict) and wire.get("type") in CONTENT_TYPES else None


def tool_result(value: Any, output_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Turn what a tool returned into a ``CallToolResult`` dict.

    ``str`` → one text block; a content block (dict with a content ``type`` or
    attrs object) or a list of them → passed through; an attrs
    ``CallToolResult`` → itself; with *output_schema*, the value (wrapped as
    ``{"result": value}`` unless it is a dict) → ``structuredContent`` plus the
    same as JSON text; anything else → JSON text.
    """
    wire = _wire(value)
    if attrs.has(type(value)) and isinstance(wire, dict) and isinstance(wire.get("content"), list):
        return dict(wire)  # a CallToolResult
    if output_schema is not None:
        structured = wire if isinstance(wire, dict) else {"result": wire}
        return {"content": [_text(json.dumps(structured))], "structuredContent": structured}
    if value is None or isinstance(value, str):
        return {"content": [] if value is None else [_text(value)]}
    items = value if isinstance(value, (list, tuple)) and value else [value]
    blocks = [_content_block(item) for item in items]
    return {"content": blocks if all(block is not None for block in blocks) else [_text(json.dumps(wire, default=str))]}


def resource_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """Turn what a resource function returned into ``ReadResourceResult.contents``."""
    contents = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, (bytes, bytearray)):
            item = {"blob": base64.b64encode(bytes(item)).decode("ascii")}
        wire = {"text": item} if isinstance(item, str) else _wire(item)
        if not isinstance(wire, dict):
            raise TypeError(f"a resource function must return str, bytes or dict, not {type(item).__name__}")
        contents.append({"uri": uri, **({"mimeType": mime_type} if mime_type is not None else {}), **wire})
    return contents


def prompt_messages(value: Any) -> list[dict[str, Any]]:
    """Turn what a prompt function returned into ``GetPromptResult.messages``.

    A ``str`` is one user message; a list may hold strings (user messages),
    ``(role, text)`` pairs, message dicts (``content`` may be a plain string)
    or attrs ``PromptMessage`` objects.
    """
    messages = []
    for item in [value] if isinstance(value, str) else value:
        if isinstance(item, str):
            item = ("user", item)
        pair = isinstance(item, tuple) and len(item) == 2
        wire = {"role": item[0], "content": item[1]} if pair else _wire(item)
        if not isinstance(wire, dict) or "role" not in wire:
            raise TypeError("a prompt message must be a str, a (role, text) pair or a message dict")
        messages.append({**wire, "content": _text(wire.get("content"))})
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
            body = ".+" if found.group(1) else "[^/?#]+"  # {+var}: anything; {var}: one path segment
            pattern += [re.escape(template[last : found.start()]), f"(?P<{found.group(2)}>{body})"]
            last = found.end()
        self._regex = re.compile("".join(pattern) + re.escape(template[last:]))
        #: The variable names, in order.
        self.variables = [m.group(2) for m in self._VAR.finditer(template)]

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables if *uri* matches the whole template, else ``None``."""
        found = self._regex.fullmatch(uri)
        return found.groupdict() if found else None
