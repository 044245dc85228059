"""How the ``mcpsync`` command prints: human text, ``--json``, the progress bar.

Results go to stdout; progress, notices and errors go to stderr, so
``mcpsync ... --json | jq`` always sees clean JSON.
"""

from __future__ import annotations

import json
import threading
from typing import Any, TextIO

from mcpsync import types

__all__ = ["ProgressBar", "dump_json", "print_content", "print_tools", "wire"]


def wire(value: Any) -> Any:
    """A protocol object (or list of them) as its JSON wire form."""
    if isinstance(value, list):
        return [wire(item) for item in value]
    return types.to_wire(value)


def dump_json(value: Any, out: TextIO) -> None:
    json.dump(value, out, indent=2, ensure_ascii=False, sort_keys=False)
    out.write("\n")


def _params(schema: dict[str, Any]) -> str:
    required = set(schema.get("required") or [])
    props = schema.get("properties") or {}
    parts = []
    for name, spec in props.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        parts.append(f"{name}{'' if name in required else '?'}: {kind}")
    return ", ".join(parts)


def print_tools(tools: list[types.Tool], out: TextIO) -> None:
    for tool in tools:
        print(f"{tool.name}({_params(tool.input_schema)})", file=out)
        if tool.description:
            print(f"    {tool.description.strip().splitlines()[0]}", file=out)


def print_content(blocks: list[Any], out: TextIO) -> None:
    """Text as it is; everything else as a one-line summary."""
    for block in blocks:
        if isinstance(block, types.TextContent):
            print(block.text, file=out)
        elif isinstance(block, (types.ImageContent, types.AudioContent)):
            print(f"[{block.type}: {block.mime_type}, {len(block.data)} base64 chars]", file=out)
        elif isinstance(block, types.ResourceLink):
            print(f"[resource link: {block.uri}]", file=out)
        elif isinstance(block, types.EmbeddedResource):
            res = block.resource
            if isinstance(res, types.TextResourceContents):
                print(res.text, file=out)
            else:
                print(f"[embedded resource: {res.uri}]", file=out)
        elif isinstance(block, types.TextResourceContents):
            print(block.text, file=out)
        elif isinstance(block, types.BlobResourceContents):
            print(f"[blob {block.uri}: {block.mime_type}, {len(block.blob)} base64 chars]", file=out)
        else:
            print(json.dumps(wire(block)), file=out)


class ProgressBar:
    """A progress bar on stderr: redrawn in place on a terminal, one line per update otherwise.

    Called on the client's dispatcher thread, so it takes a lock; :meth:`done`
    ends the line before the result is printed.
    """

    WIDTH = 30

    def __init__(self, err: TextIO) -> None:
        self._err = err
        self._tty = bool(getattr(err, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._drawn = False

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if total:
            filled = int(self.WIDTH * min(max(progress / total, 0.0), 1.0))
            text = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {progress:g}/{total:g}"
        else:
            text = f"[{progress:g}]"
        if message:
            text += f" {message}"
        with self._lock:
            if self._tty:
                self._err.write(f"\r{text}\x1b[K")
            else:
                self._err.write(f"progress {text}\n")
            self._drawn = True
            self._err.flush()

    def done(self) -> None:
        with self._lock:
            if self._tty and self._drawn:
                self._err.write("\n")
                self._err.flush()
            self._drawn = False
