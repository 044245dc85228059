"""The ``mcpsync`` command.

Each subcommand is registered in :func:`build_parser` with a ``func``
(called with the parsed arguments and the output streams, returning the exit
status).  An error becomes one line on stderr (followed, indented, by what it
quotes, such as a dead server's stderr) and one of the documented exit codes
(:data:`EXIT_CODES`); ``--debug`` adds the traceback.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import textwrap
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from mcpsync._version import __version__

#: What each exit status means; scripts may rely on these.
EXIT_CODES = {
    0: "success",
    1: "the tool ran but reported an error (isError), or an unexpected failure",
    2: "bad command line or configuration (unknown server, unset variable, bad JSON,"
       " arguments that do not fit the tool's schema)",
    3: "could not reach the server, or the connection broke",
    4: "the server answered with an error (unknown tool, invalid arguments, ...)",
    5: "timed out",
    6: "authorization failed or a login is needed (run `mcpsync login`)",
    130: "interrupted (Ctrl-C)",
}

_EPILOG = """\
examples:
  mcpsync demo                                      a guided tour with a bundled server
  mcpsync --stdio 'mcpsync demo --serve' tools      list the tools of a stdio server
  mcpsync --stdio 'mcpsync demo --serve' call add a=2 b=3
  mcpsync --config ~/.cursor/mcp.json --server github tools
  mcpsync --url https://mcp.example.com/mcp login

exit codes:
""" + "\n".join(textwrap.fill(text, 79, initial_indent=f"  {code:<4} ", subsequent_indent=" " * 7)
              for code, text in EXIT_CODES.items())

#: Each command's own examples, shown by ``mcpsync COMMAND --help``.
_EXAMPLES: dict[str, list[str]] = {
    "tools": ["mcpsync --stdio 'mcpsync demo --serve' tools",
              "mcpsync --config mcp.json --server github tools -o json"],
    "call": ["mcpsync --stdio 'mcpsync demo --serve' call add a=2 b=3",
             "mcpsync --stdio 'mcpsync demo --serve' call echo text='hello world'",
             "mcpsync --stdio 'mcpsync demo --serve' call weather --args '{\"city\": \"Oslo\"}' -o json",
             "echo '{\"a\": 1, \"b\": 2}' | mcpsync --stdio 'mcpsync demo --serve' call add --args -"],
    "resources": ["mcpsync --stdio 'mcpsync demo --serve' resources"],
    "read": ["mcpsync --stdio 'mcpsync demo --serve' read demo://greeting/Ada"],
    "prompts": ["mcpsync --stdio 'mcpsync demo --serve' prompts"],
    "prompt": ["mcpsync --stdio 'mcpsync demo --serve' prompt greet name=Ada style=pirate"],
    "servers": ["mcpsync --config ~/.cursor/mcp.json servers"],
    "login": ["mcpsync --url https://mcp.example.com/mcp login"],
    "logout": ["mcpsync --url https://mcp.example.com/mcp logout"],
    "demo": ["mcpsync demo", "mcpsync demo --print-config > mcp.json",
             "mcpsync --stdio 'mcpsync demo --serve' tools"],
}


def exit_code(exc: BaseException) -> int:
    """The exit status for an exception (see :data:`EXIT_CODES`)."""
    from mcpsync.auth import AuthError
    from mcpsync.config import ConfigError
    from mcpsync.exceptions import (CapabilityNotSupported, RequestTimeout, ServerError, TransportError,
                                    UnsupportedProtocolVersion)
    from mcpsync.group.errors import UnknownName

    statuses = ((ConfigError, 2), (AuthError, 6), (RequestTimeout, 5),
                ((ServerError, CapabilityNotSupported, UnknownName), 4),
                ((TransportError, UnsupportedProtocolVersion), 3))
    return next((status for kinds, status in statuses if isinstance(exc, kinds)), 1)


_Func = Callable[[argparse.Namespace, TextIO, TextIO], int]

#: Each command's one-line help and its description.
_HELP: dict[str, tuple[str, str]] = {
    "tools": ("list the server's tools and their parameters",
              "List every tool (all pages) as name(param: type, optional?: type) with its description."),
    "call": ("call a tool: call TOOL key=value ... | call TOOL --args '{...}'",
             "Call TOOL and print its result. Arguments are key=value pairs; a value is read as JSON (2, true,"
             " [1,2], {\"k\":1}) unless the tool's schema says the parameter is a string. They are checked"
             " against the tool's input schema before sending. Progress is drawn on stderr. Exits 1 when the"
             " tool reports an error."),
    "resources": ("list resources and resource templates", "List the server's resources (URI, name, MIME"
                  " type) and resource templates; nothing when the server has none."),
    "read": ("read a resource by URI", "Read the resource URI and print its contents (text as is; binary as"
             " a summary, or in full with -o json)."),
    "prompts": ("list prompts and their arguments", "List the server's prompts; arguments marked ? are"
                " optional. Nothing when the server has no prompts."),
    "prompt": ("get a prompt: prompt NAME key=value ...", "Get prompt NAME with the given arguments (all"
               " strings) and print its messages."),
    "servers": ("list the servers of a config file", "List the entries of the mcpServers file given with"
                " --config: name, transport, command or URL."),
    "login": ("log in to an OAuth-protected HTTP server", "Run the OAuth login for the server (--url or a"
              " config entry with url): a browser opens at the server's login page (or the URL is printed"
              " when none can open), tokens are saved in the token store and later commands use and"
              " refresh them."),
    "logout": ("forget the tokens of an HTTP server", "Delete the saved tokens and client registration of"
               " the server from the token store."),
    "demo": ("a guided tour: run the bundled demo server and show a session with it",
             "Start the bundled demo server over stdio and print a real session with it: server info, tools,"
             " a tool call with progress, resources and a prompt. --serve runs the demo server itself on"
             " stdin/stdout, for any MCP client."),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    from mcpsync.cli.commands import COMMANDS
    from mcpsync.cli.connect import add_target_options
    from mcpsync.cli.demo import cmd_demo

    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="mcpsync", epilog=_EPILOG, formatter_class=raw, description=textwrap.fill(
        "Talk to an MCP (Model Context Protocol) server from the command line: list and call its tools, read"
        " its resources, get its prompts.", 79))
    parser.add_argument("--version", action="version", version=f"mcpsync {__version__}")
    add_target_options(parser, top=True)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    commands: dict[str, _Func] = {"demo": cmd_demo, **COMMANDS}
    for name, func in commands.items():
        short, long = _HELP[name]
        examples = "".join(f"  {example}\n" for example in _EXAMPLES[name])
        sub = subparsers.add_parser(name, help=short, description=textwrap.fill(long, 79), formatter_class=raw,
                                    epilog=f"examples:\n{examples}\nexit codes: see `mcpsync --help`")
        for argument, options in _ARGUMENTS.get(name, ()):
            sub.add_argument(argument, **options)
        if name == "call":
            given = sub.add_argument_group("arguments as JSON (instead of key=value)")
            given.add_argument("--args", dest="args_json", metavar="JSON",
                               help="all arguments as one JSON object ('-': read it from stdin)")
            given.add_argument("--args-file", metavar="FILE", help="read the JSON object from FILE ('-': stdin)")
        if name == "demo":
            mode = sub.add_mutually_exclusive_group()
            mode.add_argument("--serve", action="store_true",
                              help="be the demo server: speak MCP on stdin/stdout (for --stdio or a client)")
            mode.add_argument("--print-config", action="store_true",
                              help="print an mcpServers file with the demo server in it")
        else:
            add_target_options(sub, top=False)
        sub.set_defaults(func=func)
    return parser


_Arguments = list[tuple[str, dict[str, Any]]]
#: The positional arguments and options of each command (beside the shared ones).
_ARGUMENTS: dict[str, _Arguments] = {
    "call": [("tool", {"metavar": "TOOL", "help": "the tool's name (see `tools`)"}),
             ("arguments", {"metavar": "key=value", "nargs": "*", "help": "a tool argument, e.g. a=2 or name=Ada"}),
             ("--no-check", {"action": "store_true",
                             "help": "send the arguments without checking them against the tool's schema"})],
    "read": [("uri", {"metavar": "URI", "help": "the resource URI (see `resources`)"})],
    "prompt": [("name", {"metavar": "NAME", "help": "the prompt's name (see `prompts`)"}),
               ("arguments", {"metavar": "key=value", "nargs": "*", "help": "a prompt argument, e.g. name=Ada"})],
    "login": [("--client-id", {"metavar": "ID", "help": "a client registered beforehand (default: register one)"}),
              ("--scope", {"metavar": "SCOPES", "help": "scopes to ask for beyond what the server requires"}),
              ("--login-timeout", {"type": float, "metavar": "SECONDS", "default": 300.0,
                                   "help": "how long to wait for the browser login (default 300)"})],
}


def _error_lines(exc: BaseException) -> list[str]:
    """The error as lines: the message on the first, what it quotes (server stderr) below."""
    from mcpsync.cli.output import printable

    first, _, rest = str(exc).strip().partition("\n")
    lines = [f"{type(exc).__name__}: {printable(' '.join(first.split())) or type(exc).__name__}"]
    return lines + [f"    {printable(line.rstrip())}" for line in rest.splitlines()]


def _show_warnings_once() -> Callable[..., None]:
    """``warnings.showwarning`` printing each warning once as ``mcpsync: warning: ...`` (a file may
    be read twice)."""
    shown: set[str] = set()

    def show(message: Warning | str, *args: object, **kwargs: object) -> None:
        if str(message) not in shown:
            shown.add(str(message))
            print(f"mcpsync: warning: {message}", file=sys.stderr)

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mcpsync`` command; returns the exit status.

    :param argv: the arguments (default: ``sys.argv[1:]``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    func: _Func | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    debug = bool(getattr(args, "debug", False))
    if debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                            format="%(asctime)s %(threadName)s %(name)s: %(message)s")
    from mcpsync.config import ConfigWarning

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", ConfigWarning)
            warnings.showwarning = _show_warnings_once()
            return func(args, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Output piped into e.g. `head`, which exited: not an error worth a traceback.
        # Point stdout at devnull so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - every failure becomes a message and a code
        if debug:
            traceback.print_exc(file=sys.stderr)
        from mcpsync.cli.output import Style

        first, *more = _error_lines(exc)
        print(f"mcpsync: {Style(sys.stderr).red('error')}: {first}", file=sys.stderr)
        for line in more:
            print(line, file=sys.stderr)
        return exit_code(exc)


if __name__ == "__main__":
    sys.exit(main())
