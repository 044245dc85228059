"""The ``mcpsync`` command: argument parsing (:mod:`.main`), the subcommands
(:mod:`.commands`), which server to talk to (:mod:`.connect`) and how to print
(:mod:`.output`).

May import anything below it: client, config, auth, testing (for ``mcpsync demo``).
"""

from __future__ import annotations

from mcpsync.cli.main import EXIT_CODES, main

__all__ = ["EXIT_CODES", "main"]
