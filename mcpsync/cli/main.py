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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    from mcpsync.cli.commands import COMMANDS
    from mcpsync.cli.connect import add_target_options

    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="mcpsync", epilog=_EPILOG, formatter_class=raw, description=textwrap.fill(
        "Talk to an MCP (Model Context Protocol) server from the command line: list and call its tools, read"
        " its resources, get its prompts.", 79))
    parser.add_argument("--version", action="version", version=f"mcpsync {__version__}")
    add_target_options(parser, top=True)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name, command in COMMANDS.items():
        examples = "".join(f"  {example}\n" for example in command.examples)
        sub = subparsers.add_parser(name, help=command.help, description=textwrap.fill(command.description, 79),
                                    formatter_class=raw,
                                    epilog=f"examples:\n{examples}\nexit codes: see `mcpsync --help`")
        for argument, options in command.arguments:
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
        sub.set_defaults(func=command.func)
    return parser


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

        print(f"mcpsync: {Style(sys.stderr).red('error')}: " + "\n".join(_error_lines(exc)), file=sys.stderr)
        return exit_code(exc)
