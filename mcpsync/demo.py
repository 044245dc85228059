"""The bundled demo server, and ``mcpsync demo``, a real session with it.

``mcpsync demo --serve`` (or ``python -m mcpsync.demo``) serves the demo
server over stdio, so any MCP client can use it, e.g. from an ``mcpServers``
entry (``mcpsync demo --print-config`` prints one with full paths)::

    {"mcpServers": {"demo": {"command": "mcpsync", "args": ["demo", "--serve"]}}}

:func:`mcpsync.cli.demo.run_demo` (what ``mcpsync demo`` runs) starts that server as
a subprocess with :meth:`mcpsync.Client.stdio` and prints the session.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any, TextIO

from mcpsync._version import __version__
from mcpsync.testing import FakeServer, ToolContext

__all__ = ["build_server", "main"]

_README = """\
mcpsync demo server
===================

This server is built with mcpsync.testing.FakeServer and speaks MCP over stdio.
Tools: echo, add, countdown (reports progress), weather (structured output).
Resources: demo://readme, demo://greeting/{name}. Prompt: greet.
"""

_STYLES = ("friendly", "formal", "pirate")
#: The weather tool's structured output.
_WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"}, "temperature_c": {"type": "number"}, "conditions": {"type": "string"}
    },
    "required": ["city", "temperature_c", "conditions"],
}


def build_server() -> FakeServer:
    """Build the demo server (a new :class:`~mcpsync.testing.FakeServer` each call)."""
    instructions = "A demo server: try the countdown tool to see progress."
    server = FakeServer("mcpsync-demo", __version__, instructions=instructions)

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

    @server.tool(output_schema=_WEATHER)
    def weather(city: str) -> dict[str, Any]:
        """A (made-up, deterministic) weather report for a city, as structured output."""
        seed = hashlib.sha256(city.lower().encode("utf-8")).digest()
        conditions = ("sunny", "cloudy", "rainy", "windy", "snowy")[seed[0] % 5]
        return {"city": city, "temperature_c": round(seed[1] / 255 * 35 - 5, 1), "conditions": conditions}

    @server.resource("demo://readme", name="README")
    def readme() -> str:
        """About this demo server."""
        return _README

    @server.resource_template("demo://greeting/{name}", name="greeting")
    def greeting(name: str) -> str:
        """A greeting for someone."""
        return f"Hello, {name}!"

    @server.prompt()
    def greet(name: str, style: str = "friendly") -> str:
        """Ask the model to greet someone in a given style."""
        return f"Write a short {style} greeting for {name}."

    @server.completion
    def complete(ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None) -> list[str]:
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


if __name__ == "__main__":
    main()
