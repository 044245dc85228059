"""How the ``mcpsync`` command prints: text and tables, ``-o json``, colour, progress.

Results go to stdout; progress, notices and errors go to stderr, so
``mcpsync ... -o json | jq`` always sees clean JSON.  Colour is used only on a
terminal, never when ``NO_COLOR`` is set (https://no-color.org) or
``TERM=dumb``.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from mcpsync import types

#: C0 controls but tab and newline (ESC starts every escape sequence, CR overwrites a line),
#: DEL, the C1 controls (8-bit CSI, OSC, DCS...) and the bidi overrides that reorder a line.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: What JSON leaves unescaped of those (it escapes C0 itself): DEL, C1, bidi overrides.
_JSON_CONTROL = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """Untrusted text (a server's results, stderr, names) with control characters made visible.

    A server must not be able to clear or retitle the terminal, move its
    cursor, write the clipboard (OSC 52) or recolour it: ``ESC`` becomes ``\\x1b``.
    """
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class Style:
    """ANSI styles for one stream, or plain text when colour is not wanted."""

    def __init__(self, stream: TextIO) -> None:
        env = os.environ
        tty = bool(getattr(stream, "isatty", lambda: False)())
        self.enabled = tty and not env.get("NO_COLOR") and env.get("TERM") != "dumb"

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)


def wire(value: Any) -> Any:
    """A protocol object (or list of them) as its JSON wire form."""
    return types.converter.unstructure(value)


def dump_json(value: Any, out: TextIO) -> None:
    """*value* as JSON; the controls JSON allows raw inside strings are escaped (same JSON value)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    out.write(_JSON_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return printable(lines[0]) if lines else ""


def print_signatures(items: Sequence[tuple[str, str, str | None]], out: TextIO) -> None:
    """``name(params)`` in bold, then the first line of the description, indented and dim.

    :param items: (name, signature, description) triples.
    """
    style = Style(out)
    for name, sig, description in items:
        print(style.bold(printable(name)) + printable(sig[len(name):]), file=out)
        first = _first_line(description)
        if first:
            print("    " + style.dim(first), file=out)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO) -> None:
    """Columns padded to their widest cell; the header in bold on a terminal."""
    style = Style(out)
    cells = [[printable(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(row: Sequence[str], fmt: Callable[[str], str] = str) -> str:
        padded = [c.ljust(widths[i]) if i < len(row) - 1 else c for i, c in enumerate(row)]
        return fmt("  ".join(padded)).rstrip()

    print(line(headers, style.bold), file=out)
    for row in cells:
        print(line(row), file=out)


def print_content(blocks: list[Any], out: TextIO) -> None:
    """Text as it is (control characters made visible); everything else as a one-line summary."""
    for block in blocks:
        res = block.resource if isinstance(block, types.EmbeddedResource) else block
        if isinstance(res, (types.TextContent, types.TextResourceContents)):
            text = res.text
        elif isinstance(block, (types.ImageContent, types.AudioContent)):
            text = f"[{block.type}: {block.mime_type}, {len(block.data)} base64 chars]"
        elif isinstance(block, types.ResourceLink):
            text = f"[resource link: {block.uri}]"
        elif isinstance(block, types.EmbeddedResource):
            text = f"[embedded resource: {res.uri}]"
        elif isinstance(block, types.BlobResourceContents):
            text = f"[blob {block.uri}: {block.mime_type}, {len(block.blob)} base64 chars]"
        else:
            text = json.dumps(wire(block))
        print(printable(text), file=out)


class ProgressBar:
    """Progress of a call on stderr: a bar redrawn in place on a terminal, lines otherwise.

    The bar is ``[####....] 2/5``: *width* cells of which the done part is filled,
    every line starting with *indent*.  On a terminal, a call that reports no
    progress shows how long it has been waiting once it has taken :attr:`QUIET`
    seconds (after :meth:`start`).  Progress callbacks run on the client's
    dispatcher thread and the timer on its own, so drawing takes a lock;
    :meth:`done` ends the line before the result is printed.
    """

    #: Seconds of silence before the waiting time is shown (terminal only).
    QUIET = 2.0

    def __init__(self, err: TextIO, label: str = "", *, width: int = 30, empty: str = ".", indent: str = "") -> None:
        self._err, self._label, self._width, self._empty, self._indent = err, label, width, empty, indent
        #: Set by the notification that reports ``progress >= total``.
        self.finished = threading.Event()
        self._tty = bool(getattr(err, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._drawn = False
        self._progressed = False
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._started = time.monotonic()

    def start(self) -> None:
        """Start the waiting-time display (terminal only)."""
        if self._tty:
            self._timer = threading.Thread(target=self._tick, name="mcpsync-cli-progress", daemon=True)
            self._timer.start()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            waited = time.monotonic() - self._started
            with self._lock:
                if self._stop.is_set() or self._progressed or waited < self.QUIET:
                    continue
                self._err.write(f"\r{self._label} waiting for the result... {waited:.0f} s\x1b[K")
                self._err.flush()
                self._drawn = True

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        text = f"[{progress:g}]"
        if total:
            filled = int(self._width * min(max(progress / total, 0.0), 1.0))
            text = f"[{'#' * filled}{self._empty * (self._width - filled)}] {progress:g}/{total:g}"
        if message:
            text += f" {printable(message)}"
        with self._lock:
            if self._stop.is_set() and self._tty:
                return  # a late notification after the result: the bar is finished
            self._progressed = True
            if self._tty:
                self._err.write(f"\r{self._indent}{text}\x1b[K")
            else:
                self._err.write(f"{self._indent}progress {text}\n")
            self._drawn = True
            self._err.flush()
            if total and progress >= total:
                self.finished.set()

    def done(self) -> None:
        """Stop drawing and end the bar's line; call before printing the result."""
        with self._lock:
            self._stop.set()
            if self._tty and self._drawn:
                self._err.write("\n")
                self._err.flush()
            self._drawn = False
        if self._timer is not None:
            self._timer.join(2.0)
