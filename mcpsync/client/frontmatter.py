"""The YAML frontmatter of a ``SKILL.md``: split it off, parse it, compare it with an entry.

The skills extension requires a host to parse the frontmatter of every
``SKILL.md`` it loads and compare it field by field with the skill entry's
``frontmatter`` (which the server rendered as JSON).  Both sides must read the
YAML the same way, so scalars are resolved by the YAML 1.2 *core* schema (what
JSON-minded YAML libraries use): ``yes``/``on`` and dates stay strings, ``010``
is ten.

Parsing uses PyYAML when it is installed (``pip install 'mcpsync[skills]'``).
Without it a small strict parser reads the common subset, ``key: scalar``
lines, quoted scalars and one level of nested mappings (``metadata:``), and
refuses anything else: a frontmatter it cannot read exactly is never treated
as verified.

The server chooses the file (and its digest), so parsing is bounded: a
frontmatter over :data:`MAX_FRONTMATTER_CHARS` is refused before it is parsed,
YAML anchors and aliases are refused (a few hundred bytes of nested aliases
expand to gigabytes), so are collections nested deeper than
:data:`MAX_FRONTMATTER_DEPTH` and mapping keys that are not strings.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import re
from typing import Any

__all__ = ["FrontmatterError", "split", "parse", "same", "MAX_FRONTMATTER_CHARS", "MAX_FRONTMATTER_DEPTH"]

#: The longest frontmatter parsed (the Agent Skills fields need a few hundred characters).
MAX_FRONTMATTER_CHARS = 64 * 1024
#: The deepest nesting of mappings and lists parsed.
MAX_FRONTMATTER_DEPTH = 16

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.\-/]*):(?: +(.*))?$")
#: A plain scalar the strict parser accepts: no indicator first, no ": " or " #" inside.
_PLAIN = re.compile(r"^(?:[^\-?:,\[\]{}#&*!|>'\"%@`\s]|[\-?:][^\s,\[\]{}])(?:(?!: | #)[^\t])*(?<!:)$")


class FrontmatterError(ValueError):
    """The ``SKILL.md`` has no frontmatter block, or it is not YAML this module can read."""


def split(text: str) -> tuple[str, str]:
    """``(frontmatter YAML, body)`` of a ``SKILL.md`` that begins with a ``---`` block."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        raise FrontmatterError("SKILL.md does not begin with a '---' frontmatter block")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n") == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    raise FrontmatterError("SKILL.md frontmatter block is not closed by '---'")


def parse(yaml_text: str) -> dict[str, Any]:
    """The frontmatter as JSON-compatible data (a mapping at the top)."""
    if len(yaml_text) > MAX_FRONTMATTER_CHARS:
        raise FrontmatterError(f"SKILL.md frontmatter is longer than {MAX_FRONTMATTER_CHARS} characters")
    try:
        # Through importlib: PyYAML is optional and its stubs are not a dependency.
        yaml = importlib.import_module("yaml")
    except ImportError:
        data: Any = _parse_subset(yaml_text)
    else:
        data = _parse_pyyaml(yaml, yaml_text)
    if not isinstance(data, dict):
        raise FrontmatterError("SKILL.md frontmatter is not a mapping")
    return data


def same(a: Any, b: Any) -> bool:
    """JSON equality that keeps ``true`` apart from ``1`` (Python's ``True == 1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and bool(a == b)


def _scalar(text: str) -> Any:
    """A plain scalar by the YAML 1.2 core schema."""
    if _NULL.match(text):
        return None
    if _BOOL.match(text):
        return text.lower() == "true"
    if _INT.match(text):
        sign, digits = (-1, text[1:]) if text.startswith("-") else (1, text.lstrip("+"))
        if digits.startswith("0o"):
            return sign * int(digits[2:], 8)
        if digits.startswith("0x"):
            return sign * int(digits[2:], 16)
        return sign * int(digits, 10)
    if _FLOAT.match(text):
        lowered = text.lower()
        if lowered.endswith(".nan"):
            return math.nan
        if lowered.endswith(".inf"):
            return -math.inf if lowered.startswith("-") else math.inf
        return float(text)
    return text


# -- PyYAML, with the core schema's resolvers ------------------------------------------------


def _parse_pyyaml(yaml: Any, text: str) -> Any:
    loader_cls = _core_loader(yaml)
    try:
        return yaml.load(text, Loader=loader_cls)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"SKILL.md frontmatter is not valid YAML ({type(exc).__name__})") from None


@functools.lru_cache(maxsize=None)  # one loader class per yaml module: made once
def _core_loader(yaml: Any) -> Any:
    class CoreLoader(yaml.SafeLoader):  # type: ignore[misc]
        """SafeLoader with YAML 1.2 core scalars, string keys only, no duplicate keys, no aliases."""

        yaml_implicit_resolvers: dict[str, Any] = {}
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            # Refused at the event, before anything is built: an alias shares its node, and
            # walking, comparing or printing what shares nodes grows exponentially.
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise FrontmatterError("SKILL.md frontmatter uses YAML anchors or aliases (refused)")
            if self.depth >= MAX_FRONTMATTER_DEPTH:
                raise FrontmatterError(f"SKILL.md frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH}")
            self.depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            keys = [self.construct_object(key, deep=True) for key, _ in node.value]
            if not all(isinstance(key, str) for key in keys):
                raise FrontmatterError("SKILL.md frontmatter has a key that is not a string")
            if len(set(keys)) != len(keys):
                raise FrontmatterError("SKILL.md frontmatter repeats a key")
            mapping: dict[Any, Any] = super().construct_mapping(node, deep=True)
            return mapping

    def scalar(loader: Any, node: Any) -> Any:
        return _scalar(loader.construct_scalar(node))

    for tag, pattern, first in (("null", _NULL, ["~", "n", "N", ""]), ("bool", _BOOL, list("tTfF")),
                                ("int", _INT, list("-+0123456789")), ("float", _FLOAT, list("-+0123456789."))):
        CoreLoader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", pattern, first)
        CoreLoader.add_constructor(f"tag:yaml.org,2002:{tag}", scalar)
    return CoreLoader


# -- the strict subset, without PyYAML --------------------------------------------------------


def _parse_subset(text: str) -> dict[str, Any]:
    top: dict[str, Any] = {}
    nested: dict[str, Any] | None = None
    indent = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        stripped = raw.lstrip(" ")
        lead = raw[: len(raw) - len(stripped)]
        if "\t" in lead:
            raise _unsupported(number)
        if lead:
            if nested is None or (indent and lead != indent):
                raise _unsupported(number)
            indent = lead
            target = nested
        else:
            nested, indent, target = None, "", top
        match = _KEY.match(stripped.rstrip())
        if match is None:
            raise _unsupported(number)
        key, value = match.group(1), match.group(2)
        if key in target:
            raise FrontmatterError("SKILL.md frontmatter repeats a key")
        if value is None:
            if target is not top:
                raise _unsupported(number)  # only one level of nesting
            nested = target[key] = {}
            continue
        target[key] = _subset_scalar(value, number)
    return {key: (None if value == {} else value) for key, value in top.items()}


def _subset_scalar(value: str, number: int) -> Any:
    if value.startswith('"') and value.endswith('"') and len(value) >= 2:
        try:
            decoded = json.loads(value)  # YAML double quotes share JSON's common escapes
        except ValueError:
            raise _unsupported(number) from None
        return decoded
    if value.startswith("'") and value.endswith("'") and len(value) >= 2:
        inner = value[1:-1]
        if "'" in inner.replace("''", ""):
            raise _unsupported(number)
        return inner.replace("''", "'")
    if not _PLAIN.match(value):
        raise _unsupported(number)
    return _scalar(value)


def _unsupported(number: int) -> FrontmatterError:
    return FrontmatterError(
        f"SKILL.md frontmatter line {number} needs a full YAML parser: pip install 'mcpsync[skills]'"
    )
