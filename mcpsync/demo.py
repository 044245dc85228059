"""The bundled demo server, and ``mcpsync demo``, a real session with it.

``mcpsync demo --serve`` (or ``python -m mcpsync.demo``) serves the demo
server over stdio, so any MCP client can use it, e.g. from an ``mcpServers``
entry (``mcpsync demo --print-config`` prints one with full paths)::

    {"mcpServers": {"demo": {"command": "mcpsync", "args": ["demo", "--serve"]}}}

:func:`run_demo` (what ``mcpsync demo`` runs) starts that server as a
subprocess with :meth:`mcpsync.Client.stdio` and prints the session.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

from . import __version__
from .testing import FakeServer, ToolContext

if TYPE_CHECKING:
    from .client import Client

__all__ = ["build_server", "main", "print_config", "run_demo"]

_README = """\
mcpsync demo server
===================

This server is built with mcpsync.testing.FakeServer and speaks MCP over stdio.
Tools: echo, add, countdown (reports progress), weather (structured output).
Resources: demo://readme, demo://greeting/{name}. Prompt: greet.
"""

_STYLES = ("friendly", "formal", "pirate")


def build_server() -> FakeServer:
    """Build the demo server (a new :class:`~mcpsync.testing.FakeServer` each call)."""
    server = FakeServer(
        "mcpsync-demo",
        __version__,
        instructions="A demo server: try the countdown tool to see progress.",
    )

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @server.tool()
    def countdown(ctx: ToolContext, n: int = 5, delay: float = 0.2) -> str:
        """Count down from n, reporting progress at each step."""
        for step in range(1, n + 1):
            if ctx.cancelled.wait(delay):  # sleeps, but wakes at once on cancellation
                return "Countdown aborted."
            ctx.report_progress(step, n, f"T-minus {n - step}")
        return "Liftoff!"

    @server.tool(
        output_schema={
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "temperature_c": {"type": "number"},
                "conditions": {"type": "string"},
            },
            "required": ["city", "temperature_c", "conditions"],
        }
    )
    def weather(city: str) -> dict[str, Any]:
        """A (made-up, deterministic) weather report for a city, as structured output."""
        seed = hashlib.sha256(city.lower().encode("utf-8")).digest()
        conditions = ("sunny", "cloudy", "rainy", "windy", "snowy")[seed[0] % 5]
        return {
            "city": city,
            "temperature_c": round(seed[1] / 255 * 35 - 5, 1),
            "conditions": conditions,
        }

    @server.resource("demo://readme", name="README", description="About this demo server.")
    def readme() -> str:
        return _README

    @server.resource_template(
        "demo://greeting/{name}", name="greeting", description="A greeting for someone."
    )
    def greeting(name: str) -> str:
        return f"Hello, {name}!"

    @server.prompt()
    def greet(name: str, style: str = "friendly") -> str:
        """Ask the model to greet someone in a given style."""
        return f"Write a short {style} greeting for {name}."

    @server.completion
    def complete(
        ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None
    ) -> list[str]:
        if ref.get("name") == "greet" and argument.get("name") == "style":
            prefix = str(argument.get("value", "")).lower()
            return [s for s in _STYLES if s.startswith(prefix)]
        return []

    return server


def main() -> None:
    """Serve the demo server on stdin/stdout until EOF (``python -m mcpsync.demo``)."""
    build_server().run_stdio()


def server_command() -> list[str]:
    """The command that serves the demo server: this interpreter, so it works from anywhere."""
    return [sys.executable, "-m", "mcpsync.demo"]


def print_config(out: TextIO | None = None) -> int:
    """Print an ``mcpServers`` file with the demo server (``mcpsync demo --print-config``).

    The command is this interpreter's full path, so the file works from any
    directory and in any MCP client, with or without an activated virtualenv.
    """
    command, *args = server_command()
    config = {"mcpServers": {"demo": {"command": command, "args": args}}}
    out = out if out is not None else sys.stdout
    json.dump(config, out, indent=2)
    out.write("\n")
    return 0


# -- mcpsync demo ---------------------------------------------------------------


class _ProgressPrinter:
    """Shows progress as a redrawn bar on a terminal, as plain lines otherwise."""

    WIDTH = 20

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._tty = bool(getattr(out, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self.finished = threading.Event()

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        with self._lock:
            if total:
                filled = int(self.WIDTH * min(progress / total, 1.0))
                text = f"[{'#' * filled}{'-' * (self.WIDTH - filled)}] {progress:g}/{total:g}"
            else:
                text = f"{progress:g}"
            if message:
                text += f"  {message}"
            if self._tty:
                self._out.write(f"\r    {text}\x1b[K")
            else:
                self._out.write(f"    progress {text}\n")
            self._out.flush()
            if total and progress >= total:
                if self._tty:
                    self._out.write("\n")
                self.finished.set()


def _section(out: TextIO, title: str) -> None:
    print(f"\n== {title}", file=out)


def _session(client: Client, out: TextIO) -> None:
    from ._cli_args import signature
    from .types import PromptReference, TextContent, TextResourceContents

    client.connect()
    info = client.server_info
    _section(out, "Server")
    print(f"  server:       {info.name} {info.version}", file=out)
    print(f"  protocol:     {client.protocol_version}", file=out)
    if client.instructions:
        print(f"  instructions: {client.instructions}", file=out)

    tools = client.list_tools()
    _section(out, f"Tools ({len(tools)})")
    signatures = [signature(tool.name, tool.input_schema) for tool in tools]
    width = max(map(len, signatures), default=0)
    for tool, sig in zip(tools, signatures):
        print(f"  {sig:<{width}}  {tool.description or ''}".rstrip(), file=out)

    _section(out, "Calling tools")
    print(f"  echo(text='hello') -> {client.call_tool('echo', {'text': 'hello'}).text}", file=out)
    print(f"  add(a=2, b=3) -> {client.call_tool('add', {'a': 2, 'b': 3}).text}", file=out)
    print("  countdown(n=5, delay=0.2), with progress:", file=out)
    printer = _ProgressPrinter(out)
    result = client.call_tool("countdown", {"n": 5, "delay": 0.2}, progress=printer)
    # Progress callbacks run on the dispatcher thread; let the last one print first.
    printer.finished.wait(2.0)
    print(f"  -> {result.text}", file=out)
    report = client.call_tool("weather", {"city": "Paris"})
    print(
        f"  weather(city='Paris') -> structured content {json.dumps(report.structured_content)}",
        file=out,
    )

    _section(out, "Resources")
    for resource in client.list_resources():
        print(f"  {resource.uri}  ({resource.name}, {resource.mime_type})", file=out)
    for template in client.list_resource_templates():
        print(f"  {template.uri_template}  (template: {template.name})", file=out)
    for uri in ("demo://readme", "demo://greeting/Ada"):
        print(f"  read {uri}:", file=out)
        for item in client.read_resource(uri).contents:
            if isinstance(item, TextResourceContents):
                for line in item.text.splitlines():
                    print(f"    | {line}".rstrip(), file=out)

    _section(out, "Prompts")
    for prompt in client.list_prompts():
        args = ", ".join(a.name + ("" if a.required else "?") for a in (prompt.arguments or []))
        print(f"  {prompt.name}({args})  {prompt.description or ''}", file=out)
    styles = client.complete(PromptReference(name="greet"), "style", "f").values
    print(f"  completions for greet style 'f': {', '.join(styles)}", file=out)
    got = client.get_prompt("greet", {"name": "Ada", "style": "pirate"})
    print("  greet(name='Ada', style='pirate'):", file=out)
    for message in got.messages:
        text = (
            message.content.text
            if isinstance(message.content, TextContent)
            else repr(message.content)
        )
        print(f"    {message.role}: {text}", file=out)


def run_demo(out: TextIO | None = None) -> int:
    """Start the demo server over stdio and print a real session with it.

    :param out: where to write (default: ``sys.stdout``).
    :returns: the exit status: 0 on success, 1 if the session failed.
    """
    from .client import Client
    from .exceptions import McpError

    out = out if out is not None else sys.stdout
    print("mcpsync demo: a real MCP session over stdio with the bundled demo server", file=out)
    print("  (the server is `mcpsync demo --serve`; here it runs as", file=out)
    print(f"   {' '.join(server_command())})", file=out)
    try:
        with Client.stdio(
            server_command(),
            client_info=("mcpsync-demo-client", __version__),
            timeout=30.0,
        ) as client:
            _session(client, out)
    except McpError as exc:
        print(f"\ndemo failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print("\nDone: the server process has been shut down.", file=out)
    print(_NEXT.format(mcpsync=_own_command()), file=out)
    return 0


_NEXT = """
Next, try the command line on the same server:
  {mcpsync} --stdio '{mcpsync} demo --serve' tools
  {mcpsync} --stdio '{mcpsync} demo --serve' call add a=2 b=3
  {mcpsync} --help"""


def _own_command() -> str:
    """How the user ran ``mcpsync`` (e.g. ``.venv/bin/mcpsync``), for the hints."""
    import os
    import shlex

    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "mcpsync":
        return shlex.quote(argv0)
    return "mcpsync"


if __name__ == "__main__":
    main()
