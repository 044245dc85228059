"""Tool arguments for ``mcpsync call``: ``key=value`` pairs, ``--args`` JSON, schema checks.

The tool's ``inputSchema`` (JSON Schema) guides both directions: a
``key=value`` value is read as JSON unless the parameter takes a string, and
the arguments are checked (required names, types, enums, unknown names when
``additionalProperties`` is false) before anything is sent, so a mistake is
one clear line instead of the server's validation dump.  The checks are
shallow on purpose: nested objects are the server's business.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcpsync.config import ConfigError


class UsageError(ConfigError):
    """The command line is not usable: no server named, bad arguments (exit status 2)."""

#: Enum values shown in a type before ``|...``.
_ENUM_SHOWN = 6


def _dedup(parts: list[str]) -> list[str]:
    return list(dict.fromkeys(parts))


def type_name(spec: Any) -> str:
    """A JSON Schema in a few characters: ``string``, ``integer|null``, ``string[]``, ``"a"|"b"``.

    >>> type_name({"type": ["boolean", "string"]})
    'boolean|string'
    >>> type_name({"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]})
    'integer[]|null'
    >>> type_name({"enum": ["celsius", "fahrenheit"]})
    '"celsius"|"fahrenheit"'
    """
    if not isinstance(spec, dict):
        return "any"
    if "const" in spec:
        return json.dumps(spec["const"])
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        shown = "|".join(json.dumps(v) for v in enum[:_ENUM_SHOWN])
        return shown + ("|..." if len(enum) > _ENUM_SHOWN else "")
    kind = spec.get("type")
    if isinstance(kind, str):
        return _single(kind, spec)
    if isinstance(kind, list) and kind:
        return "|".join(_dedup([_single(k, spec) for k in kind if isinstance(k, str)]))
    for key in ("anyOf", "oneOf"):
        options = spec.get(key)
        if isinstance(options, list) and options:
            return "|".join(_dedup([type_name(option) for option in options]))
    all_of = spec.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return type_name(all_of[0])
    ref = spec.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    if "properties" in spec:
        return "object"
    if "items" in spec:
        return _single("array", spec)
    return "any"


def _single(kind: str, spec: dict[str, Any]) -> str:
    items = spec.get("items")
    if kind == "array" and isinstance(items, dict) and items:
        inner = type_name(items)
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    return kind


def signature(name: str, schema: Any) -> str:
    """``add(a: number, b?: number)``: ``?`` marks optional parameters."""
    schema = schema if isinstance(schema, dict) else {}
    required = set(schema.get("required") or [])
    props = schema.get("properties") or {}
    params = [f"{p}{'' if p in required else '?'}: {type_name(s)}" for p, s in props.items()]
    return f"{name}({', '.join(params)})"


def prompt_params(prompt: Any) -> str:
    """``name, style?``: a prompt's arguments, ``?`` marking optional ones."""
    return ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments or [])


def _types(spec: Any) -> set[str] | None:
    """The JSON types *spec* allows, or ``None`` when it does not say."""
    if not isinstance(spec, dict):
        return None
    kind = spec.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    for key in ("anyOf", "oneOf"):
        options = spec.get(key)
        if isinstance(options, list) and options:
            kinds = [_types(option) for option in options]
            return None if None in kinds else {kind for some in kinds if some for kind in some}
    return None


#: The JSON types that are one Python class (numbers are told apart below).
_CLASSES: dict[str, type] = {"string": str, "boolean": bool, "null": type(None), "object": dict, "array": list}


def _is(value: Any, kind: str) -> bool:
    if kind in _CLASSES:
        return isinstance(value, _CLASSES[kind])
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return kind == "number" or (kind == "integer" and float(value).is_integer())


def _type_ok(value: Any, spec: Any) -> bool:
    allowed = _types(spec)
    if allowed is None or allowed.isdisjoint({*_CLASSES, "number", "integer"}):
        return True  # the schema does not say (or says something we do not check)
    return any(_is(value, kind) for kind in allowed)


def _coerce(raw: str, spec: Any) -> Any:
    """A ``key=value`` value: JSON when that fits the schema, else the string as typed."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw  # not JSON: a string is the friendliest reading
    allowed = _types(spec)
    if allowed is None or _type_ok(parsed, spec) or "string" not in allowed:
        return parsed
    return raw  # e.g. text=007 or zip=12345 for a string parameter


def parse_arguments(pairs: list[str], schema: Any, *, strings: bool = False) -> dict[str, Any]:
    """``["a=1", "name=Ada"]`` → ``{"a": 1, "name": "Ada"}``, guided by a JSON Schema.

    >>> parse_arguments(["a=2", "text=007", "tags=[1,2]"],
    ...                 {"properties": {"text": {"type": "string"}}})
    {'a': 2, 'text': '007', 'tags': [1, 2]}

    :param strings: keep every value a string (prompt arguments).
    :raises UsageError: a pair without ``=``.
    """
    props = (schema if isinstance(schema, dict) else {}).get("properties") or {}
    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            hint = " (for a JSON object use --args '{...}')" if pair.lstrip().startswith("{") else ""
            raise UsageError(f"expected key=value, got {pair!r}{hint}")
        result[key] = value if strings else _coerce(value, props.get(key))
    return result


def json_arguments(text: str | None, path: str | None) -> dict[str, Any]:
    """The arguments of ``--args JSON`` (``-``: stdin) or ``--args-file FILE``."""
    where = "--args"
    if path is not None:
        where = f"--args-file {path}"
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    elif text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text or "")
    except ValueError as exc:
        raise UsageError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{where} must be a JSON object, like '{{\"a\": 1}}'")
    return value


def check_arguments(name: str, schema: Any, arguments: dict[str, Any]) -> None:
    """Check *arguments* against the tool's input schema before sending them.

    :raises UsageError: every problem found, and the tool's signature.
    """
    schema = schema if isinstance(schema, dict) else {}
    props = schema.get("properties") or {}
    if not isinstance(props, dict):
        return
    problems = [f"missing required argument {req!r}" for req in schema.get("required") or []
                if isinstance(req, str) and req not in arguments]
    for key, value in arguments.items():
        spec = props.get(key)
        if spec is None:
            if schema.get("additionalProperties") is False:
                problems.append(f"unknown argument {key!r}")
            continue
        wrong_enum = isinstance(spec, dict) and isinstance(spec.get("enum"), list) and value not in spec["enum"]
        if not _type_ok(value, spec) or wrong_enum:
            problems.append(f"argument {key!r} must be of type {type_name(spec)}, got {json.dumps(value)}")
    if problems:
        raise UsageError(
            f"tool {name!r}: " + "; ".join(problems)
            + f"\nusage: {signature(name, schema)}  (? marks optional; --no-check sends anyway)"
        )


def check_prompt_arguments(prompt: Any, arguments: dict[str, Any]) -> None:
    """Check a prompt's arguments (all strings): required ones given, no unknown names.

    :param prompt: the :class:`~mcpsync.types.Prompt`.
    :raises UsageError: every problem found, and the prompt's signature.
    """
    params = prompt.arguments or []
    problems = [f"missing required argument {p.name!r}" for p in params if p.required and p.name not in arguments]
    problems += [f"unknown argument {key!r}" for key in arguments if key not in {p.name for p in params}]
    if problems:
        raise UsageError(f"prompt {prompt.name!r}: " + "; ".join(problems)
                         + f"\nusage: {prompt.name}({prompt_params(prompt)})  (? marks optional)")
