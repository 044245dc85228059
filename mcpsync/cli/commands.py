"""The subcommands of ``mcpsync`` that talk to a server.

Each ``cmd_<name>(args, out, err)`` returns the exit status; errors are
raised and turned into one line (and an exit code) by :func:`mcpsync.cli.main.main`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from mcpsync import types

from mcpsync.cli.args import (UsageError, check_arguments, check_prompt_arguments, json_arguments, parse_arguments,
                              prompt_params, signature)
from mcpsync.cli.connect import oauth_for, open_client, resolve
from mcpsync.cli.demo import cmd_demo
from mcpsync.cli.output import ProgressBar, dump_json, print_content, print_signatures, print_table, printable, wire
from mcpsync.config import load_config
from mcpsync.exceptions import MethodNotFound
from mcpsync.group.errors import UnknownName

if TYPE_CHECKING:
    from mcpsync.auth import OAuth
    from mcpsync.client.client import Client

#: Tool names listed when a name is not found.
_NAMES_SHOWN = 30


def _find(kind: str, name: str, listed: list[Any]) -> Any:
    """The tool or prompt *name* of those the server lists.

    :raises UnknownName: when it lists no such name (exit status 4, as if the server said so).
    """
    found = next((item for item in listed if item.name == name), None)
    if found is None:
        names = sorted(item.name for item in listed)
        shown = ", ".join(names[:_NAMES_SHOWN]) + (", ..." if len(names) > _NAMES_SHOWN else "")
        raise UnknownName(kind, name, f" on the server; its {kind}s: {shown or 'none'}")
    return found


def _dumped(args: argparse.Namespace, value: Any, out: TextIO) -> bool:
    """Print *value* (protocol objects or JSON) as JSON if ``-o json`` was given; whether it was."""
    as_json: bool = getattr(args, "output", None) == "json"
    if as_json:
        dump_json(value if isinstance(value, dict) else wire(value), out)
    return as_json


def _listed(client: Client, capability: str, list_items: Callable[[], list[Any]]) -> list[Any]:
    """What the server lists of a feature it declares, else nothing."""
    return list_items() if getattr(client.server_capabilities, capability) is not None else []


def cmd_tools(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_client(args) as client:
        tools: list[types.Tool] = _listed(client, "tools", client.list_tools)
    if not _dumped(args, tools, out):
        print_signatures([(t.name, signature(t.name, t.input_schema), t.description) for t in tools], out)
    return 0


def _arguments(args: argparse.Namespace, client: Client) -> dict[str, Any]:
    """The call's arguments, typed and checked by the tool's schema (unless --no-check)."""
    as_json = args.args_json is not None or args.args_file is not None
    if as_json and args.arguments:
        raise UsageError("give key=value arguments or --args/--args-file, not both")
    if args.args_json is not None and args.args_file is not None:
        raise UsageError("give --args or --args-file, not both")
    given = json_arguments(args.args_json, args.args_file) if as_json else None
    if args.no_check:
        return given if given is not None else parse_arguments(args.arguments, None)
    tool: types.Tool = _find("tool", args.tool, client.list_tools())
    arguments = given if given is not None else parse_arguments(args.arguments, tool.input_schema)
    check_arguments(tool.name, tool.input_schema, arguments)
    return arguments


def cmd_call(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_client(args) as client:
        arguments = _arguments(args, client)
        bar = ProgressBar(err, label=args.tool)
        bar.start()
        try:
            result = client.call_tool(args.tool, arguments, progress=bar)
        finally:
            bar.done()
    if not _dumped(args, result, out):
        print_content(result.content, out)
        if result.structured_content is not None and not result.content:
            dump_json(result.structured_content, out)
    if result.is_error:
        print(f"error: tool {args.tool!r} reported an error", file=err)
        return 1
    return 0


def _templates(client: Client) -> list[types.ResourceTemplate]:
    try:
        return client.list_resource_templates()
    except MethodNotFound:  # common with servers on the official SDK 1.x
        return []


def cmd_resources(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_client(args) as client:
        resources: list[types.Resource] = _listed(client, "resources", client.list_resources)
        templates = _listed(client, "resources", lambda: _templates(client))
    if _dumped(args, {"resources": wire(resources), "resourceTemplates": wire(templates)}, out):
        return 0
    rows = [[r.uri, r.name or "", r.mime_type or ""] for r in resources]
    rows += [[t.uri_template, t.name or "", "(template)"] for t in templates]
    if rows:
        print_table(["URI", "NAME", "MIME TYPE"], rows, out)
    return 0


def cmd_read(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_client(args) as client:
        result = client.read_resource(args.uri)
    if not _dumped(args, result, out):
        print_content(list(result.contents), out)
    return 0


def cmd_prompts(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_client(args) as client:
        prompts: list[types.Prompt] = _listed(client, "prompts", client.list_prompts)
    if not _dumped(args, prompts, out):
        print_signatures([(p.name, f"{p.name}({prompt_params(p)})", p.description) for p in prompts], out)
    return 0


def cmd_prompt(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    # Prompt arguments are always strings on the wire.
    arguments = parse_arguments(args.arguments, None, strings=True)
    with open_client(args) as client:
        if client.server_capabilities.prompts is not None:
            check_prompt_arguments(_find("prompt", args.name, client.list_prompts()), arguments)
        result = client.get_prompt(args.name, arguments)
    if not _dumped(args, result, out):
        for message in result.messages:
            print(f"[{printable(message.role)}]", file=out)
            print_content([message.content], out)
    return 0


def cmd_servers(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import os

    path = getattr(args, "config", None) or os.environ.get("MCPSYNC_CONFIG")
    if not path:
        raise UsageError("servers lists a config file: give --config FILE (or set MCPSYNC_CONFIG)")
    servers = load_config(path, expand_variables=False)
    # As the file says it: the "auto" transport (Streamable HTTP, else legacy SSE) is type "http".
    shown = {name: "http" if s.transport == "auto" else s.transport for name, s in servers.items()}
    if _dumped(args, {name: {"transport": shown[name], "target": s.target, **s.options}
                      for name, s in servers.items()}, out):
        return 0
    print_table(["NAME", "TRANSPORT", "COMMAND OR URL"],
                [[name, shown[name], s.target] for name, s in servers.items()], out)
    return 0


def _remote(args: argparse.Namespace, *, interactive: bool) -> tuple[str, OAuth]:
    """The HTTP server's URL and its OAuth with the persistent token store."""
    entry = resolve(args)
    if entry.url is None or entry.transport == "websocket":
        raise UsageError("login and logout are for HTTP servers (--url, or a config entry with url)")
    return entry.url, oauth_for(args, entry.url, interactive=interactive)


def cmd_login(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url, auth = _remote(args, interactive=True)
    print(f"Logging in to {url}: a browser opens (or the URL is printed here)...", file=err)
    auth.login_now(url)
    print(f"Logged in to {url}; tokens saved in {auth.store!r}.", file=out)
    return 0


def cmd_logout(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url, auth = _remote(args, interactive=False)
    auth.logout()
    print(f"Logged out of {url}: tokens and registration removed.", file=out)
    return 0


class Command(NamedTuple):
    """A subcommand: what runs it, its one-line help, its description, examples and own arguments."""

    func: Callable[[argparse.Namespace, TextIO, TextIO], int]
    help: str
    description: str
    examples: list[str]
    arguments: Sequence[tuple[str, dict[str, Any]]] = ()


_DEMO = "mcpsync --stdio 'mcpsync demo --serve'"
#: Every subcommand, in the order ``mcpsync --help`` lists them.
COMMANDS = {
    "demo": Command(cmd_demo, "a guided tour: run the bundled demo server and show a session with it",
                    "Start the bundled demo server over stdio and print a real session with it: server info, tools,"
                    " a tool call with progress, resources and a prompt. --serve runs the demo server itself on"
                    " stdin/stdout, for any MCP client.",
                    ["mcpsync demo", "mcpsync demo --print-config > mcp.json", f"{_DEMO} tools"]),
    "tools": Command(cmd_tools, "list the server's tools and their parameters",
                     "List every tool (all pages) as name(param: type, optional?: type) with its description.",
                     [f"{_DEMO} tools", "mcpsync --config mcp.json --server github tools -o json"]),
    "call": Command(cmd_call, "call a tool: call TOOL key=value ... | call TOOL --args '{...}'",
                    "Call TOOL and print its result. Arguments are key=value pairs; a value is read as JSON (2, true,"
                    " [1,2], {\"k\":1}) unless the tool's schema says the parameter is a string. They are checked"
                    " against the tool's input schema before sending. Progress is drawn on stderr. Exits 1 when the"
                    " tool reports an error.",
                    [f"{_DEMO} call add a=2 b=3", f"{_DEMO} call echo text='hello world'",
                     f"{_DEMO} call weather --args '{{\"city\": \"Oslo\"}}' -o json",
                     f"echo '{{\"a\": 1, \"b\": 2}}' | {_DEMO} call add --args -"],
                    [("tool", {"metavar": "TOOL", "help": "the tool's name (see `tools`)"}),
                     ("arguments", {"metavar": "key=value", "nargs": "*",
                                    "help": "a tool argument, e.g. a=2 or name=Ada"}),
                     ("--no-check", {"action": "store_true",
                                     "help": "send the arguments without checking them against the tool's schema"})]),
    "resources": Command(cmd_resources, "list resources and resource templates",
                         "List the server's resources (URI, name, MIME type) and resource templates; nothing when"
                         " the server has none.", [f"{_DEMO} resources"]),
    "read": Command(cmd_read, "read a resource by URI", "Read the resource URI and print its contents (text as is;"
                    " binary as a summary, or in full with -o json).", [f"{_DEMO} read demo://greeting/Ada"],
                    [("uri", {"metavar": "URI", "help": "the resource URI (see `resources`)"})]),
    "prompts": Command(cmd_prompts, "list prompts and their arguments", "List the server's prompts; arguments"
                       " marked ? are optional. Nothing when the server has no prompts.", [f"{_DEMO} prompts"]),
    "prompt": Command(cmd_prompt, "get a prompt: prompt NAME key=value ...", "Get prompt NAME with the given"
                      " arguments (all strings) and print its messages.",
                      [f"{_DEMO} prompt greet name=Ada style=pirate"],
                      [("name", {"metavar": "NAME", "help": "the prompt's name (see `prompts`)"}),
                       ("arguments", {"metavar": "key=value", "nargs": "*",
                                      "help": "a prompt argument, e.g. name=Ada"})]),
    "servers": Command(cmd_servers, "list the servers of a config file", "List the entries of the mcpServers file"
                       " given with --config: name, transport, command or URL.",
                       ["mcpsync --config ~/.cursor/mcp.json servers"]),
    "login": Command(cmd_login, "log in to an OAuth-protected HTTP server", "Run the OAuth login for the server"
                     " (--url or a config entry with url): a browser opens at the server's login page (or the URL"
                     " is printed when none can open), tokens are saved in the token store and later commands use"
                     " and refresh them.", ["mcpsync --url https://mcp.example.com/mcp login"],
                     [("--client-id", {"metavar": "ID",
                                       "help": "a client registered beforehand (default: register one)"}),
                      ("--scope", {"metavar": "SCOPES", "help": "scopes to ask for beyond what the server requires"}),
                      ("--login-timeout", {"type": float, "metavar": "SECONDS", "default": 300.0,
                                           "help": "how long to wait for the browser login (default 300)"})]),
    "logout": Command(cmd_logout, "forget the tokens of an HTTP server", "Delete the saved tokens and client"
                      " registration of the server from the token store.",
                      ["mcpsync --url https://mcp.example.com/mcp logout"]),
}
