"""``flask mcp servers | tools [SERVER] | call [SERVER] TOOL key=value ...`` (the ``mcpsync`` CLI)."""

from __future__ import annotations

import sys

import click
import flask
from flask.cli import AppGroup

from ...cli.args import UsageError
from .._cli import COMMANDS, run

mcp_command = AppGroup("mcp", help="The app's MCP servers (MCP_SERVERS).")


def _run(command: str, args: tuple[str, ...], timeout: float | None) -> None:
    config = flask.current_app.config
    servers = config.get("MCP_SERVERS")
    if servers is None:
        raise click.UsageError("MCP_SERVERS is not set")
    if timeout is None:
        timeout = (config.get("MCP_DEFAULTS") or {}).get("timeout")
    try:
        status = run(servers, "flask mcp", command, args, timeout=timeout, stdout=sys.stdout, stderr=sys.stderr)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
    if status:
        raise SystemExit(status)


_ARGS = {"ignore_unknown_options": True, "allow_interspersed_args": False}
_TIMEOUT = click.option("--timeout", type=float, default=None, help="seconds per request")


@mcp_command.command("servers", help=COMMANDS["servers"])
def servers() -> None:
    _run("servers", (), None)


@mcp_command.command("tools", help=COMMANDS["tools"], context_settings=_ARGS)
@_TIMEOUT
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def tools(args: tuple[str, ...], timeout: float | None) -> None:
    _run("tools", args, timeout)


@mcp_command.command("call", help=COMMANDS["call"], context_settings=_ARGS)
@_TIMEOUT
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def call(args: tuple[str, ...], timeout: float | None) -> None:
    _run("call", args, timeout)
