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
from typing import TextIO

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


def _command_epilog(name: str) -> str:
    lines = [f"  {example}" for example in _EXAMPLES[name]]
    return "examples:\n" + "\n".join(lines) + "\n\nexit codes: see `mcpsync --help`"


def exit_code(exc: BaseException) -> int:
    """The exit status for an exception (see :data:`EXIT_CODES`)."""
    from mcpsync.auth import AuthError
    from mcpsync.config import ConfigError
    from mcpsync.exceptions import (
        CapabilityNotSupported,
        RequestTimeout,
        ServerError,
        TransportError,
        UnsupportedProtocolVersion,
    )
    from mcpsync.group.errors import UnknownName

    if isinstance(exc, ConfigError):
        return 2
    if isinstance(exc, AuthError):
        return 6
    if isinstance(exc, RequestTimeout):
        return 5
    if isinstance(exc, (ServerError, CapabilityNotSupported, UnknownName)):
        return 4
    if isinstance(exc, (TransportError, UnsupportedProtocolVersion)):
        return 3
    return 1


def _cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mcpsync import demo

    if args.serve:
        if sys.stdin.isatty():  # a person, not an MCP client: say what this is
            print("mcpsync demo --serve: the demo MCP server, speaking JSON-RPC on stdin/stdout.\n"
                  "Run it as a server command instead, e.g.\n"
                  "  mcpsync --stdio 'mcpsync demo --serve' tools\n"
                  "(waiting for messages; Ctrl-D or Ctrl-C stops it)", file=err)
        demo.main()
        return 0
    if args.print_config:
        return demo.print_config(out)
    from mcpsync.cli.demo import run_demo

    return run_demo(out)


_Func = Callable[[argparse.Namespace, TextIO, TextIO], int]

# name: (one-line help, description, arguments adder)
_HELP: dict[str, tuple[str, str]] = {
    "tools": ("list the server's tools and their parameters",
              ("List every tool (all pages) as name(param: type, optional?: type) with its "
              "description.")),
    "call": ("call a tool: call TOOL key=value ... | call TOOL --args '{...}'",
             ("Call TOOL and print its result. Arguments are key=value pairs; a value is read as "
             "JSON (2, true, [1,2], {\"k\":1}) unless the tool's schema says the parameter is a "
             "string. They are checked against the tool's input schema before sending. Progress "
             "is drawn on stderr. Exits 1 when the tool reports an error.")),
    "resources": ("list resources and resource templates", ("List the server's resources "
                  "(URI, name, MIME type) and resource templates; nothing when the server has "
                  "none.")),
    "read": ("read a resource by URI", ("Read the resource URI and print its contents "
             "(text as is; binary as a summary, or in full with -o json).")),
    "prompts": ("list prompts and their arguments", ("List the server's prompts; arguments "
                "marked ? are optional. Nothing when the server has no prompts.")),
    "prompt": ("get a prompt: prompt NAME key=value ...", ("Get prompt NAME with the given "
               "arguments (all strings) and print its messages.")),
    "servers": ("list the servers of a config file", ("List the entries of the mcpServers "
                "file given with --config: name, transport, command or URL.")),
    "login": ("log in to an OAuth-protected HTTP server", ("Run the OAuth login for the server "
              "(--url or a config entry with url): a browser opens at the server's login page "
              "(or the URL is printed when none can open), tokens are saved in the token "
              "store and later commands use and refresh them.")),
    "logout": ("forget the tokens of an HTTP server", ("Delete the saved tokens and client "
               "registration of the server from the token store.")),
    "demo": ("a guided tour: run the bundled demo server and show a session with it",
             ("Start the bundled demo server over stdio and print a real session with it: "
              "server info, tools, a tool call with progress, resources and a prompt. "
              "--serve runs the demo server itself on stdin/stdout, for any MCP client.")),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    from mcpsync.cli.commands import COMMANDS
    from mcpsync.cli.connect import add_target_options

    parser = argparse.ArgumentParser(
        prog="mcpsync",
        description=textwrap.fill("Talk to an MCP (Model Context Protocol) server from the "
                                  "command line: list and call its tools, read its resources, "
                                  "get its prompts.", 79),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mcpsync {__version__}")
    add_target_options(parser, top=True)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")

    commands: dict[str, _Func] = {"demo": _cmd_demo, **COMMANDS}
    for name, func in commands.items():
        short, long = _HELP[name]
        sub = subparsers.add_parser(name, help=short, description=textwrap.fill(long, 79),
                                    epilog=_command_epilog(name),
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        _ARGUMENTS.get(name, _no_arguments)(sub)
        if name != "demo":
            add_target_options(sub, top=False)
        sub.set_defaults(func=func)
    return parser


def _no_arguments(sub: argparse.ArgumentParser) -> None:
    pass


def _call_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("tool", metavar="TOOL", help="the tool's name (see `tools`)")
    sub.add_argument("arguments", metavar="key=value", nargs="*",
                     help="a tool argument, e.g. a=2 or name=Ada")
    given = sub.add_argument_group("arguments as JSON (instead of key=value)")
    given.add_argument("--args", dest="args_json", metavar="JSON",
                       help="all arguments as one JSON object ('-': read it from stdin)")
    given.add_argument("--args-file", metavar="FILE",
                       help="read the JSON object from FILE ('-': stdin)")
    sub.add_argument("--no-check", action="store_true",
                     help="send the arguments without checking them against the tool's schema")


def _read_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("uri", metavar="URI", help="the resource URI (see `resources`)")


def _prompt_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("name", metavar="NAME", help="the prompt's name (see `prompts`)")
    sub.add_argument("arguments", metavar="key=value", nargs="*",
                     help="a prompt argument, e.g. name=Ada")


def _login_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--client-id", metavar="ID",
                     help="a client registered beforehand (default: register one)")
    sub.add_argument("--scope", metavar="SCOPES",
                     help="scopes to ask for beyond what the server requires")
    sub.add_argument("--login-timeout", type=float, metavar="SECONDS", default=300.0,
                     help="how long to wait for the browser login (default 300)")


def _demo_arguments(sub: argparse.ArgumentParser) -> None:
    mode = sub.add_mutually_exclusive_group()
    mode.add_argument("--serve", action="store_true",
                      help="be the demo server: speak MCP on stdin/stdout (for --stdio or a client)")
    mode.add_argument("--print-config", action="store_true",
                      help="print an mcpServers file with the demo server in it")


_ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "call": _call_arguments,
    "read": _read_arguments,
    "prompt": _prompt_arguments,
    "login": _login_arguments,
    "demo": _demo_arguments,
}


def _error_lines(exc: BaseException) -> list[str]:
    """The error as lines: the message on the first, what it quotes (server stderr) below."""
    from mcpsync.cli.output import printable

    text = str(exc).strip()
    first, _, rest = text.partition("\n")
    lines = [f"{type(exc).__name__}: {printable(' '.join(first.split())) or type(exc).__name__}"]
    lines += [f"    {printable(line.rstrip())}" for line in rest.splitlines()]
    return lines


class _Warnings:
    """Shows each warning once, as ``mcpsync: warning: ...`` (a file may be read twice)."""

    def __init__(self) -> None:
        self._shown: set[str] = set()

    def show(self, message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        text = str(message)
        if text not in self._shown:
            self._shown.add(text)
            print(f"mcpsync: warning: {text}", file=sys.stderr)


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
            warnings.showwarning = _Warnings().show
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
