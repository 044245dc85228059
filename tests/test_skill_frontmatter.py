"""SKILL.md frontmatter: splitting, YAML 1.2 core scalars, the strict no-PyYAML parser, comparison."""

from __future__ import annotations

import importlib
import math
from typing import Any

import pytest

from mcpsync.client import frontmatter as fm

#: Frontmatter both parsers read, and what it means (YAML 1.2 core schema).
SUBSET: list[tuple[str, Any]] = [
    ("name: pdf-processing", "pdf-processing"),
    ("v: 'it''s: quoted'", "it's: quoted"),
    ('v: "tab\\tand \\"quote\\" and \\u00e9"', 'tab\tand "quote" and é'),
    ("v: yes", "yes"),  # YAML 1.1 would say True; JSON-minded servers say "yes"
    ("v: on", "on"),
    ("v: 2024-01-01", "2024-01-01"),  # no timestamps
    ("v: true", True),
    ("v: FALSE", False),
    ("v: ~", None),
    ("v:", None),
    ("v: 010", 10),
    ("v: 0o17", 15),
    ("v: 0x1F", 31),
    ("v: -5", -5),
    ("v: 1.5e3", 1500.0),
    ("v: .inf", math.inf),
    ("v: -0x1F", "-0x1F"),
    ("v: a-b c.d/e", "a-b c.d/e"),
]


@pytest.mark.parametrize(("line", "value"), SUBSET, ids=[line for line, _ in SUBSET])
def test_both_parsers_agree_on_the_subset(line: str, value: Any) -> None:
    key = line.split(":", 1)[0]
    assert fm.same(fm.parse(line + "\n")[key], value)
    assert fm.same(fm._parse_subset(line + "\n")[key], value)


def test_a_colon_space_in_a_plain_scalar_is_not_yaml() -> None:
    for parse in (fm.parse, fm._parse_subset):
        with pytest.raises(fm.FrontmatterError):
            parse("description: Use when: needed\n")


def test_nested_mapping_in_both_parsers() -> None:
    text = "name: x\nmetadata:\n  version: \"2.1\"\n  reviewed: true\nlicense: MIT\n"
    expected = {"name": "x", "metadata": {"version": "2.1", "reviewed": True}, "license": "MIT"}
    assert fm.parse(text) == expected == fm._parse_subset(text)


@pytest.mark.parametrize("text", ["a: 1\na: 2\n", "m:\n  k: 1\n  k: 2\n"])
def test_repeated_keys_are_refused(text: str) -> None:
    with pytest.raises(fm.FrontmatterError, match="repeats"):
        fm.parse(text)
    with pytest.raises(fm.FrontmatterError, match="repeats"):
        fm._parse_subset(text)


@pytest.mark.parametrize("text", [
    "tags: [a, b]\n", "d: |\n  block\n", "d: >\n  folded\n", "- item\n", "a: &x 1\nb: *x\n",
    "a:\n  b:\n    c: 1\n", "a: x # comment\n", "\ta: 1\n", "'quoted key': 1\n",
])
def test_the_subset_refuses_what_it_cannot_read_exactly(text: str) -> None:
    with pytest.raises(fm.FrontmatterError, match=r"mcpsync\[skills\]"):
        fm._parse_subset(text)


def test_without_pyyaml_the_subset_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def no_yaml(name: str, *args: Any) -> Any:
        if name == "yaml":
            raise ImportError("no PyYAML here")
        return real(name, *args)

    monkeypatch.setattr(fm.importlib, "import_module", no_yaml)
    assert fm.parse("name: a\ndescription: b\n") == {"name": "a", "description": "b"}
    with pytest.raises(fm.FrontmatterError, match=r"pip install 'mcpsync\[skills\]'"):
        fm.parse("tags: [a]\n")


def test_split() -> None:
    assert fm.split("---\nname: a\n---\nbody\n---\n") == ("name: a\n", "body\n---\n")
    assert fm.split("---\r\nname: a\r\n---\r\nbody") == ("name: a\r\n", "body")
    for bad in ["name: a\n", "\n---\nname: a\n---\n", "---\nname: a\n"]:
        with pytest.raises(fm.FrontmatterError):
            fm.split(bad)


def test_same_keeps_json_types_apart() -> None:
    assert fm.same({"a": [1, 2.0, None]}, {"a": [1.0, 2, None]})
    assert not fm.same(True, 1) and not fm.same(0, False)
    assert not fm.same({"a": 1}, {"a": 1, "b": None})
    assert not fm.same([1], [1, 1]) and not fm.same("1", 1)
    assert fm.same(math.nan, math.nan)


#: A billion laughs in 500 bytes: nine levels of nine aliases, 9**9 strings once expanded.
BOMB = "name: bomb\ndescription: laughs\n" + "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9)
) + "? *l8\n: key\n"


@pytest.mark.parametrize("text", [BOMB, "a: &x 1\n", "a: &x [1]\nb: *x\n", "a: !!str &x b\n"])
def test_anchors_and_aliases_are_refused(text: str) -> None:
    with pytest.raises(fm.FrontmatterError, match="anchors or aliases"):
        fm.parse(text)
    with pytest.raises(fm.FrontmatterError, match=r"mcpsync\[skills\]"):
        fm._parse_subset(text)


def test_size_depth_and_key_limits() -> None:
    with pytest.raises(fm.FrontmatterError, match="longer than 65536"):
        fm.parse("name: x\ndescription: " + "y" * fm.MAX_FRONTMATTER_CHARS + "\n")
    assert fm.parse("d: " + "y" * 60_000 + "\n")["d"] == "y" * 60_000
    with pytest.raises(fm.FrontmatterError, match="nests deeper than 16"):
        fm.parse("a: " + "[" * 17 + "]" * 17 + "\n")
    assert fm.parse("a: " + "[" * 15 + "]" * 15 + "\n")["a"] == [[[[[[[[[[[[[[[]]]]]]]]]]]]]]]
    for text in ("? [a, b]\n: 1\n", "1: x\n", "m:\n  true: x\n"):
        with pytest.raises(fm.FrontmatterError, match="not a string"):
            fm.parse(text)
