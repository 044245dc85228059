"""``mcpsync demo``: a real MCP session with the bundled demo server (:mod:`mcpsync.demo`),
printed step by step.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, TextIO

from mcpsync._version import __version__
from mcpsync.cli.args import prompt_params, signature
from mcpsync.cli.output import ProgressBar
from mcpsync.demo import server_command

if TYPE_CHECKING:
    from mcpsync.client.client import Client


def _section(out: TextIO, title: str) -> None:
    print(f"\n== {title}", file=out)


def _session(client: Client, out: TextIO) -> None:
    from mcpsync.types import PromptReference, TextContent, TextResourceContents

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
    printer = ProgressBar(out, width=20, empty="-", indent="    ")
    result = client.call_tool("countdown", {"n": 5, "delay": 0.2}, progress=printer)
    # Progress callbacks run on the dispatcher thread; let the last one print first.
    printer.finished.wait(2.0)
    printer.done()
    print(f"  -> {result.text}", file=out)
    report = client.call_tool("weather", {"city": "Paris"})
    print(f"  weather(city='Paris') -> structured content {json.dumps(report.structured_content)}", file=out)

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
        print(f"  {prompt.name}({prompt_params(prompt)})  {prompt.description or ''}", file=out)
    styles = client.complete(PromptReference(name="greet"), "style", "f").values
    print(f"  completions for greet style 'f': {', '.join(styles)}", file=out)
    got = client.get_prompt("greet", {"name": "Ada", "style": "pirate"})
    print("  greet(name='Ada', style='pirate'):", file=out)
    for message in got.messages:
        text = message.content.text if isinstance(message.content, TextContent) else repr(message.content)
        print(f"    {message.role}: {text}", file=out)


def cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``mcpsync demo``: the guided tour, or (``--serve``) the demo server, or its config."""
    from mcpsync import demo

    if args.serve:
        if sys.stdin.isatty():  # a person, not an MCP client: say what this is
            print("mcpsync demo --serve: the demo MCP server, speaking JSON-RPC on stdin/stdout.\n"
                  "Run it as a server command instead, e.g.\n"
                  "  mcpsync --stdio 'mcpsync demo --serve' tools\n"
                  "(waiting for messages; Ctrl-D or Ctrl-C stops it)", file=err)
        demo.main()
        return 0
    return demo.print_config(out) if args.print_config else run_demo(out)


def run_demo(out: TextIO | None = None) -> int:
    """Start the demo server over stdio and print a real session with it.

    :param out: where to write (default: ``sys.stdout``).
    :returns: the exit status: 0 on success, 1 if the session failed.
    """
    from mcpsync.client.client import Client
    from mcpsync.exceptions import McpError

    out = out if out is not None else sys.stdout
    print("mcpsync demo: a real MCP session over stdio with the bundled demo server", file=out)
    print("  (the server is `mcpsync demo --serve`; here it runs as", file=out)
    print(f"   {' '.join(server_command())})", file=out)
    try:
        with Client.stdio(server_command(), client_info=("mcpsync-demo-client", __version__), timeout=30.0) as client:
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
