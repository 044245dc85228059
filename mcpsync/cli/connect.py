"""Which server the ``mcpsync`` command talks to, and how it logs in.

``--config FILE --server NAME`` (an ``mcpServers`` entry), ``--stdio CMD`` or
``--url URL``; ``MCPSYNC_CONFIG`` and ``MCPSYNC_SERVER`` stand in for the
first pair.  Remote servers get :class:`mcpsync.auth.OAuth` with a persistent
token store, so ``mcpsync login`` once is enough for later commands.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpsync._version import __version__
from mcpsync.auth import AuthError, FileTokenStore, KeyringTokenStore, LoopbackLogin, OAuth, TokenStore
from mcpsync.cli.args import UsageError
from mcpsync.client.era_cache import era_options
from mcpsync.config import MODES, ServerConfig, load_config

if TYPE_CHECKING:
    from mcpsync.auth._loopback import LoopbackReceiver
    from mcpsync.client.client import Client


class NotLoggedIn(AuthError):
    """The server needs a login and the command may not start one by itself."""


class _NoLogin(LoopbackLogin):
    """A login that refuses to start: scripts must never wait for a browser."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url

    def receiver(self, preferred_port: int | None = None) -> LoopbackReceiver:
        raise NotLoggedIn(f"{self._url} needs a login: run `mcpsync --url {self._url} login` first")


def add_target_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The server-selection and output options, accepted before or after the command.

    On subcommands the defaults are suppressed so that a value given before
    the command is not overwritten by the subparser's default.
    """
    d: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    group = parser.add_argument_group("choosing the server (one of)")
    group.add_argument("--config", metavar="FILE", help="an mcpServers JSON file "
                       "(Claude Desktop/Cursor/VS Code format; env: MCPSYNC_CONFIG)", **d)
    group.add_argument("--server", metavar="NAME", help="the entry of --config to use "
                       "(env: MCPSYNC_SERVER; optional when the file has one entry)", **d)
    group.add_argument("--stdio", metavar="CMD", help="run CMD (split like a shell would) "
                       "and talk to it over stdin/stdout, e.g. --stdio 'mcpsync demo --serve'", **d)
    group.add_argument("--url", metavar="URL", help="a remote server: http(s):// or ws(s)://", **d)
    group.add_argument("--header", metavar="'NAME: VALUE'", action="append",
                       help="an HTTP header for --url (repeatable)", **d)
    group.add_argument("--transport", choices=["auto", "streamable-http", "sse", "websocket"],
                       help="for --url: the transport (default: auto, or websocket for ws://)", **d)
    timing = parser.add_argument_group("timing and protocol (seconds; defaults, or the config entry's)")
    timing.add_argument("--timeout", type=_seconds, metavar="S",
                        help="per-request timeout (default 60; progress resets it)", **d)
    timing.add_argument("--discover-timeout", type=_seconds, metavar="S",
                        help="bound on probing which protocol era the server speaks", **d)
    timing.add_argument("--close-grace", type=_seconds, metavar="S",
                        help="stdio: wait this long for the server to exit after EOF, then "
                        "SIGTERM (default 2)", **d)
    timing.add_argument("--terminate-grace", type=_seconds, metavar="S",
                        help="stdio: wait this long after SIGTERM, then SIGKILL (default 2)", **d)
    timing.add_argument("--mode", choices=MODES, metavar="MODE",
                        help="the protocol era: auto (default: probe with server/discover, fall back"
                        " to the initialize handshake), legacy (the handshake only: no probe),"
                        " modern, or a protocol version to pin", **d)
    other = parser.add_argument_group("output and other options")
    other.add_argument("-o", "--output", choices=["text", "json"], help="output format: text (default) or json", **d)
    other.add_argument("--json", dest="output", action="store_const", const="json", help="the same as -o json", **d)
    other.add_argument("--token-store", metavar="DIR|keyring",
                       help="where OAuth tokens live (default: ~/.config/mcpsync/tokens;"
                       " env: MCPSYNC_TOKEN_STORE)", **d)
    other.add_argument("--debug", action="store_true", help="show tracebacks, debug logs and the server's stderr", **d)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def _opt(args: argparse.Namespace, name: str) -> Any:
    return getattr(args, name, None)


def resolve(args: argparse.Namespace) -> ServerConfig:
    """The server the options name, as a config entry."""
    config = _opt(args, "config") or os.environ.get("MCPSYNC_CONFIG")
    stdio, url = _opt(args, "stdio"), _opt(args, "url")
    chosen = [flag for flag, v in (("--config", config if not (stdio or url) else _opt(args, "config")),
                                   ("--stdio", stdio), ("--url", url)) if v]
    if len(chosen) > 1:
        raise UsageError(f"give only one of {', '.join(chosen)}")
    if stdio:
        argv = shlex.split(stdio)
        if not argv:
            raise UsageError("--stdio needs a command")
        return ServerConfig(name="stdio", transport="stdio", command=argv[0], args=argv[1:])
    if url:
        headers = {}
        for header in _opt(args, "header") or []:
            key, sep, value = header.partition(":")
            if not sep or not key.strip():
                raise UsageError(f"--header must look like 'Name: value', got {header.split(':')[0]!r}")
            headers[key.strip()] = value.strip()
        transport = _opt(args, "transport") or ("websocket" if url.startswith(("ws://", "wss://")) else "auto")
        return ServerConfig(name="url", transport=transport, url=url, headers=headers or None)
    if config:
        name = _opt(args, "server") or os.environ.get("MCPSYNC_SERVER")
        if name is None:
            # Only counting: the entry's own parse below warns about its keys.
            servers = load_config(config, expand_variables=False, warn_unknown=False)
            if len(servers) != 1:
                raise UsageError(f"--server NAME is needed: {config} has {', '.join(servers) or 'no servers'}")
            name = next(iter(servers))
        return load_config(config, name)[name]
    raise UsageError("no server given: use --stdio CMD, --url URL or --config FILE --server NAME"
                     " (try `mcpsync demo` for a first look)")


def _store(args: argparse.Namespace) -> TokenStore:
    where = _opt(args, "token_store") or os.environ.get("MCPSYNC_TOKEN_STORE")
    if where == "keyring":
        return KeyringTokenStore()
    if where:
        return FileTokenStore(Path(where).expanduser())
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return FileTokenStore(base / "mcpsync" / "tokens")


def oauth_for(args: argparse.Namespace, url: str, *, interactive: bool) -> OAuth:
    """OAuth with the persistent store; a browser login only when *interactive*."""
    login = LoopbackLogin(timeout=_opt(args, "login_timeout") or 300.0) if interactive else _NoLogin(url)
    return OAuth(store=_store(args), login=login, client_name="mcpsync-cli",
                 client_id=_opt(args, "client_id"), scopes=_opt(args, "scope"), server_url=url)


#: Timing and protocol options of the command line; each sets the client option of the same name.
_TIMING = ("timeout", "discover_timeout", "close_grace", "terminate_grace", "mode")
_STDIO_ONLY = ("close_grace", "terminate_grace")


def open_client(args: argparse.Namespace, *, interactive_login: bool | None = None) -> Client:
    """A client for the chosen server (not yet connected).

    Timing and ``--mode`` options given on the command line win over the config entry's,
    which win over the defaults (a 60 s request timeout for the CLI).
    """
    from mcpsync.client.client import Client

    entry = resolve(args)
    # era_options: the remembered era, so no probe for a server met before.
    options: dict[str, Any] = {"timeout": 60.0, "client_info": ("mcpsync-cli", __version__), **entry.options,
                               **era_options(entry)}
    for name in _TIMING:
        value = _opt(args, name)
        if value is None:
            continue
        if name in _STDIO_ONLY and entry.transport != "stdio":
            raise UsageError(f"--{name.replace('_', '-')} applies to stdio servers only")
        options[name] = value
    # A stdio server's stderr goes to the mcpsync.server logger (shown with --debug); a server
    # that dies has its first and last stderr lines in the error anyway.
    headers = {k.lower() for k in entry.headers or {}}
    if entry.url is not None and "authorization" not in headers and entry.transport != "websocket":
        if interactive_login is None:
            interactive_login = sys.stdin.isatty() and sys.stderr.isatty()
        options["auth"] = oauth_for(args, entry.url, interactive=interactive_login)
    return Client.from_server_config(entry, **options)
