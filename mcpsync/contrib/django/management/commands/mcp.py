"""``manage.py mcp servers | tools [SERVER] | call [SERVER] TOOL key=value ...``.

Runs the ``mcpsync`` command line on ``MCP_SERVERS`` (see ``docs/cli.rst`` for
the output and exit codes); a non-zero exit status becomes a
``CommandError`` with that status.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcpsync.contrib._cli import COMMANDS, run


class Command(BaseCommand):
    help = "List the configured MCP servers, list a server's tools, or call a tool."
    requires_system_checks: list[str] = []  # the app's ready() already refused bad settings

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("subcommand", choices=sorted(COMMANDS),
                            help="; ".join(f"{k}: {v}" for k, v in COMMANDS.items()))
        parser.add_argument("arguments", nargs=argparse.REMAINDER, metavar="ARG",
                            help="[SERVER] for tools; [SERVER] TOOL key=value ... (or --json "
                            "'{...}') for call")
        parser.add_argument("--timeout", type=float, default=None,
                            help="seconds per request (default: MCP_DEFAULTS' timeout, else 60)")

    def handle(self, *args: Any, **options: Any) -> None:
        command = options["subcommand"]
        run(lambda name: getattr(settings, name, None), "manage.py mcp", command, options["arguments"],
            timeout=options["timeout"], stdout=_stream(self.stdout), stderr=_stream(self.stderr),
            usage=lambda message: CommandError(message, returncode=2),
            failed=lambda status: CommandError(f"mcp {command} failed (exit status {status})", returncode=status))


def _stream(wrapper: Any) -> Any:
    # Django's OutputWrapper adds a newline to every write(); print() writes the newline
    # separately, so the CLI writes to the stream underneath.
    return getattr(wrapper, "_out", wrapper)
