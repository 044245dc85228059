"""``flask mcp servers | tools [SERVER] | call [SERVER] TOOL key=value ...`` (the ``mcpsync`` CLI)."""

from __future__ import annotations

import sys

import click
import flask
from flask.cli import AppGroup

from .._cli import COMMANDS, run

mcp_command = AppGroup("mcp", help="The app's MCP servers (MCP_SERVERS).")


_ARGS = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def _command(name: str) -> None:
    @mcp_command.command(name, help=COMMANDS[name], context_settings=_ARGS)
    @click.option("--timeout", type=float, default=None, help="seconds per request")
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args: tuple[str, ...], timeout: float | None) -> None:
        run(flask.current_app.config.get, "flask mcp", name, args, timeout=timeout, stdout=sys.stdout,
            stderr=sys.stderr, usage=click.UsageError, failed=SystemExit)


for _name in COMMANDS:
    _command(_name)
