"""The ``mcpsync`` command.

Each subcommand is registered in :func:`build_parser` with a ``func``
(called with the parsed arguments and the output streams, returning the exit
status).  Errors become one line on stderr and one of the documented exit
codes (:data:`EXIT_CODES`); ``--debug`` adds the traceback.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from typing import TextIO

from mcpsync._version import __version__

__all__ = ["EXIT_CODES", "build_parser", "exit_code", "main"]

#: What each exit status means; scripts may rely on these.
EXIT_CODES = {
    0: "success",
    1: "the tool ran but reported an error (isError), or an unexpected failure",
    2: "bad command line or configuration (unknown server, unset variable, bad JSON)",
    3: "could not reach the server, or the connection broke",
    4: "the server answered with an error (unknown tool, invalid arguments, ...)",
    5: "timed out",
    6: "authorization failed or a login is needed (run `mcpsync login`)",
    130: "interrupted (Ctrl-C)",
}

_EPILOG = """\
examples:
  mcpsync demo                                      a guided tour with a bundled server
  mcpsync --stdio 'python -m mcpsync.demo' tools    list the tools of a stdio server
  mcpsync --stdio 'python -m mcpsync.demo' call add a=2 b=3
  mcpsync --config ~/mcp.json --server github tools
  mcpsync --url https://mcp.example.com/mcp login

exit codes:
""" + "\n".join(f"  {code:<4} {text}" for code, text in EXIT_CODES.items())


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

    if isinstance(exc, ConfigError):
        return 2
    if isinstance(exc, AuthError):
        return 6
    if isinstance(exc, RequestTimeout):
        return 5
    if isinstance(exc, (ServerError, CapabilityNotSupported)):
        return 4
    if isinstance(exc, (TransportError, UnsupportedProtocolVersion)):
        return 3
    return 1


def _cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mcpsync.demo import run_demo

    return run_demo(out)


_Func = Callable[[argparse.Namespace, TextIO, TextIO], int]

# name: (one-line help, description, arguments adder)
_HELP: dict[str, tuple[str, str]] = {
    "tools": ("list the server's tools and their parameters",
              ("List every tool (all pages) as name(param: type, optional?: type) with its "
              "description.")),
    "call": ("call a tool: call TOOL key=value ... | call TOOL --json '{...}'",
             ("Call TOOL and print its result. Arguments are key=value pairs; a value is read as "
             "JSON (2, true, [1,2], {\"k\":1}) unless the tool's schema says the parameter is a "
             "string. Progress, if the tool reports any, is drawn on stderr. Exits 1 when the "
             "tool reports an error.")),
    "resources": ("list resources and resource templates", ("List the server's resources "
                  "(URI, name, MIME type) and resource templates.")),
    "read": ("read a resource by URI", ("Read the resource URI and print its contents "
             "(text as is; binary as a summary, or in full with -o json).")),
    "prompts": ("list prompts and their arguments", ("List the server's prompts; arguments "
                "marked ? are optional.")),
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
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    from mcpsync.cli.commands import COMMANDS
    from mcpsync.cli.connect import add_target_options

    parser = argparse.ArgumentParser(
        prog="mcpsync",
        description="Talk to an MCP (Model Context Protocol) server from the command line: "
        "list and call its tools, read its resources, get its prompts.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mcpsync {__version__}")
    add_target_options(parser, top=True)
    parser.add_argument("--json", dest="json_output", action="store_true",
                        help="print JSON instead of text (same as -o json)")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")

    demo = subparsers.add_parser(
        "demo",
        help="run the bundled demo server and show a real session with it",
        description="Start `python -m mcpsync.demo` over stdio and print a session: "
        "server info, tools, a tool call with progress, resources and a prompt.",
    )
    demo.set_defaults(func=_cmd_demo)

    for name, func in COMMANDS.items():
        short, long = _HELP[name]
        sub = subparsers.add_parser(name, help=short, description=textwrap.fill(long, 79),
                                    epilog=_EPILOG,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == "call":
            sub.add_argument("tool", metavar="TOOL", help="the tool's name (see `tools`)")
            sub.add_argument("arguments", metavar="key=value", nargs="*",
                             help="a tool argument, e.g. a=2 or name=Ada")
            sub.add_argument("--json", dest="json_args", metavar="ARGS",
                             help="all arguments as one JSON object ('-': read it from stdin);"
                             " for JSON output use -o json")
        else:
            sub.add_argument("--json", dest="json_output", action="store_true",
                             default=argparse.SUPPRESS, help="print JSON (same as -o json)")
        if name == "read":
            sub.add_argument("uri", metavar="URI", help="the resource URI (see `resources`)")
        if name == "prompt":
            sub.add_argument("name", metavar="NAME", help="the prompt's name (see `prompts`)")
            sub.add_argument("arguments", metavar="key=value", nargs="*",
                             help="a prompt argument, e.g. name=Ada")
        if name == "login":
            sub.add_argument("--client-id", metavar="ID",
                             help="a client registered beforehand (default: register one)")
            sub.add_argument("--scope", metavar="SCOPES",
                             help="scopes to ask for beyond what the server requires")
            sub.add_argument("--login-timeout", type=float, metavar="SECONDS", default=300.0,
                             help="how long to wait for the browser login (default 300)")
        add_target_options(sub, top=False)
        sub.set_defaults(func=func)
    return parser


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
    try:
        return func(args, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Output piped into e.g. `head`, which exited: not an error worth a traceback.
        # Point stdout at devnull so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - every failure becomes one line and a code
        if debug:
            traceback.print_exc(file=sys.stderr)
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"mcpsync: error: {type(exc).__name__}: {message}", file=sys.stderr)
        return exit_code(exc)


if __name__ == "__main__":
    sys.exit(main())
