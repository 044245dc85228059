"""How the ``mcpsync`` command draws: colour only on a terminal, tables, progress, escapes."""

from __future__ import annotations

import io
import threading

import pytest

from mcpsync.cli.args import type_name
from mcpsync.cli.output import ProgressBar, Style, print_signatures, print_table, printable


class Terminal(io.StringIO):
    """A stream that says it is a terminal; *written* is set on every write."""

    def __init__(self) -> None:
        super().__init__()
        self.written = threading.Event()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        count = super().write(text)
        self.written.set()
        return count


@pytest.fixture()
def colour_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def test_colour_only_on_a_terminal(colour_env: None) -> None:
    out = Terminal()
    print_signatures([("add", "add(a: number)", "Add.\nMore.")], out)
    assert out.getvalue() == "\x1b[1madd\x1b[0m(a: number)\n    \x1b[2mAdd.\x1b[0m\n"
    plain = io.StringIO()
    print_signatures([("add", "add(a: number)", "Add.\nMore.")], plain)
    assert plain.getvalue() == "add(a: number)\n    Add.\n"


@pytest.mark.parametrize(("name", "value"), [("NO_COLOR", "1"), ("TERM", "dumb")])
def test_no_color_and_dumb_terminals_get_plain_text(
    colour_env: None, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert not Style(Terminal()).enabled
    out = Terminal()
    print_table(["A", "B"], [["x", "y"]], out)
    assert "\x1b" not in out.getvalue()


def test_table_columns_line_up_and_escape_control_characters() -> None:
    out = io.StringIO()
    print_table(["URI", "NAME"], [["demo://a", "x"], ["b", "evil\x1b[2J"]], out)
    assert out.getvalue().splitlines() == [
        "URI       NAME", "demo://a  x", "b         evil\\x1b[2J"]
    assert printable("ok\tfine\x07") == "ok\tfine\\x07"


def test_progress_lines_off_a_terminal_and_a_redrawn_bar_on_one() -> None:
    plain = io.StringIO()
    bar = ProgressBar(plain, label="t")
    bar.start()
    bar(1, 2, "half")
    bar.done()
    bar(2, 2, None)  # a late notification still gets its line off a terminal
    assert plain.getvalue().splitlines() == [
        "progress [###############...............] 1/2 half",
        "progress [##############################] 2/2"]
    term = Terminal()
    bar = ProgressBar(term, label="t")
    bar(1, 4, None)
    bar.done()
    bar(2, 4, None)  # after done(): the finished line is not touched again
    assert term.getvalue() == "\r[#######.......................] 1/4\x1b[K\n"


@pytest.mark.timeout(30)
def test_a_silent_call_shows_its_waiting_time_on_a_terminal() -> None:
    term = Terminal()
    bar = ProgressBar(term, label="slow")
    bar.QUIET = 0.0
    bar.start()
    try:
        assert term.written.wait(10)
    finally:
        bar.done()
    assert term.getvalue().startswith("\rslow waiting for the result... ")
    assert term.getvalue().endswith("\x1b[K\n")


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ({"type": "string"}, "string"),
        ({"type": ["boolean", "string"]}, "boolean|string"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "integer|null"),
        ({"type": "array", "items": {"type": ["string", "null"]}}, "(string|null)[]"),
        ({"type": "array"}, "array"),
        ({"enum": list(range(8))}, "0|1|2|3|4|5|...") ,
        ({"const": "x"}, '"x"'),
        ({"$ref": "#/$defs/Point"}, "Point"),
        ({"allOf": [{"type": "object"}]}, "object"),
        ({}, "any"),
        (True, "any"),
    ],
)
def test_type_names(spec: object, shown: str) -> None:
    assert type_name(spec) == shown
