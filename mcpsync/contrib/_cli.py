"""``mcp servers|tools|call`` for the frameworks' command lines, run by the ``mcpsync`` CLI itself.

The framework command turns its arguments into an ``mcpsync`` command line
with ``--config`` pointing at the app's servers, so output, exit codes and
error messages are those documented in ``docs/cli.rst``.  When the setting is
a mapping, its entries are written *as written* (``${VAR}`` unexpanded, so no
secret reaches the disk) to a private temporary file for the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from mcpsync.cli.args import UsageError

from ._server_set import EXTRA_KEYS, read_servers

#: The subcommands offered, and their help.
COMMANDS = {
    "servers": "list the configured MCP servers",
    "tools": "list a server's tools: tools [SERVER]",
    "call": "call a tool: call [SERVER] TOOL key=value ...",
}


@contextlib.contextmanager
def _config_file(servers: object) -> Iterator[str]:
    if isinstance(servers, (str, os.PathLike)):
        yield os.fspath(servers)
        return
    entries, _ = read_servers(servers)
    plain = {
        name: {k: v for k, v in entry.items() if k not in EXTRA_KEYS}
        for name, entry in entries.items()
        if isinstance(entry, dict)
    }
    with tempfile.TemporaryDirectory(prefix="mcpsync-") as directory:  # 0700
        path = os.path.join(directory, "mcp.json")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"mcpServers": plain}, handle)
        yield path


def argv_for(prog: str, command: str, rest: Sequence[str], names: Sequence[str]) -> list[str]:
    """The ``mcpsync`` arguments after ``--config FILE`` for ``PROG COMMAND REST``.

    The server is the first argument, and may be left out when there is one
    server (``call``'s first argument is a server name only if it is one).

    :raises UsageError: no server (or an unknown one) named, said in *prog*'s own syntax.
    """
    args = list(rest)
    if command == "servers":
        return ["servers", *args]
    if args and args[0] in names:
        server, args = args[0], args[1:]
    elif len(names) == 1:
        server = names[0]
    else:
        usage = f"{prog} {command} SERVER" + (" TOOL key=value ..." if command == "call" else "")
        named = f"no server {args[0]!r}" if args and not args[0].startswith("-") else "name a server"
        raise UsageError(f"{named}: {usage} (servers: {', '.join(names) or 'none'})")
    return ["--server", server, command, *args]


def run(setting: Callable[[str], Any], prog: str, command: str, rest: Sequence[str], *, timeout: float | None,
        stdout: TextIO, stderr: TextIO, usage: Callable[[str], Exception],
        failed: Callable[[int], BaseException]) -> None:
    """Run ``mcpsync --config <MCP_SERVERS> ... COMMAND REST``, in the framework's own terms.

    :param setting: the app's setting of a name (``None``: unset).
    :param prog: the framework's command (``"manage.py mcp"``), for usage errors.
    :param timeout: seconds per request (``None``: ``MCP_DEFAULTS``' timeout, else the CLI's).
    :param usage: the framework's usage error of a message (raised for ``MCP_SERVERS`` not
        set, and see :func:`argv_for`).
    :param failed: the framework's error of a non-zero exit status (raised for one).
    """
    from mcpsync.cli.main import main

    servers = setting("MCP_SERVERS")
    if timeout is None:
        timeout = (setting("MCP_DEFAULTS") or {}).get("timeout")
    try:
        if servers is None:
            raise UsageError("MCP_SERVERS is not set")
        tail = argv_for(prog, command, rest, list(read_servers(servers)[0]))
    except UsageError as exc:
        raise usage(str(exc)) from None
    with _config_file(servers) as path:
        argv = ["--config", path, *tail]
        if timeout is not None:
            argv[2:2] = ["--timeout", str(timeout)]
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            status = main(argv)
    if status:
        raise failed(status)
