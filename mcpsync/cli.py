"""The ``mcpsync`` command.

Each subcommand is one ``_add_<name>`` function that registers its parser and
sets ``func`` (called with the parsed arguments, returning the exit status),
so adding a command is adding one function to :data:`_COMMANDS`.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

from . import __version__

__all__ = ["main", "build_parser"]


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(sys.stdout)


def _add_demo(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the bundled demo server and show a real session with it",
        description="Start `python -m mcpsync.demo` over stdio and print a session: "
        "server info, tools, a tool call with progress, resources and a prompt.",
    )
    parser.set_defaults(func=_cmd_demo)


_COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [_add_demo]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="mcpsync", description="A synchronous client for MCP servers."
    )
    parser.add_argument("--version", action="version", version=f"mcpsync {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in _COMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mcpsync`` command; returns the exit status.

    :param argv: the arguments (default: ``sys.argv[1:]``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Output piped into e.g. `head`, which exited: not an error worth a traceback.
        # Point stdout at devnull so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
