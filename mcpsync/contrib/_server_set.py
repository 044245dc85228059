"""The MCP servers of a web app: one setting, checked at startup, one shared client each.

Both integrations read the same two settings:

``MCP_SERVERS``
    the ``mcpServers`` shape (``{"demo": {"command": ...}, ...}``, with or
    without the outer ``{"mcpServers": ...}``), or the path of such a file.
    Besides the keys :mod:`mcpsync.config` knows, an entry may carry
    ``options`` (client options for this server, over the defaults) and
    ``oauth`` (``true`` or ``{"client_id": ..., "scopes": ...}``: the server
    is called on behalf of each user, see :mod:`._useroauth`).  ``allow``,
    ``deny`` and ``annotations`` are accepted for the tool filters of
    :class:`mcpsync.ClientGroup`.
``MCP_DEFAULTS``
    client options every server gets (``timeout``, ``mode``, ``client_info``,
    transport options such as ``close_grace``), plus ``oauth`` defaults.

:func:`validate` turns them into :class:`ServerSpec` records and a list of
:class:`Problem` (unknown keys, unset variables, commands that are not
there, options the client refuses), so a bad setting is reported when the
app starts, not at the first request.  :class:`ServerSet` then makes one
:class:`~mcpsync.shared.SharedClient` per server: nothing connects until the
first call in a process, and a forked worker makes its own connection.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from .. import _fork
from ..client.client import Client
from ..config import (ENTRY_KEYS, ConfigError, ServerConfig, UnsetVariableError, load_config, read_document,
                      unknown_keys)
from ..exceptions import ClientClosed
from ..group import ClientGroup
from ..shared import SharedClient

log = logging.getLogger(__name__)

#: Entry keys the integrations add (``allow``/``deny``/``annotations``: ClientGroup filters).
EXTRA_KEYS = frozenset({"options", "oauth", "allow", "deny", "annotations"})
#: Keys of an entry's (or the defaults') ``oauth`` object: arguments of :class:`mcpsync.auth.OAuth`.
OAUTH_KEYS = frozenset(
    {"client_id", "client_secret", "client_name", "scopes", "client_metadata_url"}
)


@attrs.frozen
class Problem:
    """One thing wrong (or suspicious) in the settings, in the shape of a Django check message."""

    #: ``"error"`` (the app must not start) or ``"warning"``.
    level: str
    #: A stable id, e.g. ``"mcpsync.E002"``, for silencing or searching.
    id: str
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        hint = f" HINT: {self.hint}" if self.hint else ""
        return f"({self.id}) {self.message}{hint}"


class ServerSetError(ConfigError):
    """The MCP settings have errors; :attr:`problems` lists all of them."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"MCP_SERVERS has {len(problems)} error(s):\n{lines}")


@attrs.frozen
class ServerSpec:
    """One validated server: its parsed entry, its client options, its OAuth settings."""

    name: str
    config: ServerConfig
    # The rest stays out of repr(): client options and OAuth settings may hold secrets
    # (client_secret, headers), and so may the entry as written.
    #: Keyword arguments for the client constructor (defaults, then the entry's ``options``).
    options: dict[str, Any] = attrs.field(repr=False)
    #: ``None``: the app's own client (:meth:`ServerSet.get_client`); else the
    #: :class:`mcpsync.auth.OAuth` arguments for per-user clients.
    oauth: dict[str, Any] | None = attrs.field(repr=False)


def read_servers(source: Any) -> tuple[dict[str, Any], str]:
    """The raw server entries of a ``MCP_SERVERS`` value, and where they came from.

    :raises ConfigError: unreadable file, bad JSON, not a mapping.
    """
    if isinstance(source, (str, os.PathLike)):
        try:
            data, origin = read_document(source)
        except ConfigError as exc:
            raise ConfigError(f"MCP_SERVERS: {exc}") from None
    else:
        data, origin = source, "MCP_SERVERS"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{origin} must be a mapping of server names to entries, or a file path")
    if "mcpServers" in data or (origin != "MCP_SERVERS" and "servers" in data):
        data = data.get("mcpServers", data.get("servers"))
        if not isinstance(data, Mapping):
            raise ConfigError(f"{origin}: 'mcpServers' must be a mapping")
    return dict(data), origin


def _unknown(found: list[tuple[str, str | None]], known: frozenset[str], where: str) -> list[Problem]:
    """A warning per unknown key (*found*: each with the known key it resembles)."""
    return [Problem("warning", "mcpsync.W001", f"{where}: unknown key {key!r} (ignored)",
                    f"did you mean {close!r}?" if close else f"known keys: {', '.join(sorted(known))}")
            for key, close in found]


def _command_problem(entry: ServerConfig, where: str) -> Problem | None:
    command = entry.command or ""
    env_path = (entry.env or {}).get("PATH", os.environ.get("PATH"))
    if os.sep in command:
        base = Path(entry.cwd or ".") / command
        found = base.is_file() and os.access(base, os.X_OK)
    else:
        found = shutil.which(command, path=env_path) is not None
    if not found:
        return Problem(
            "error", "mcpsync.E003", f"{where}: command {command!r} is not an executable found on PATH",
            "install it, or give its full path",
        )
    if entry.cwd is not None and not Path(entry.cwd).is_dir():
        return Problem("error", "mcpsync.E003", f"{where}: cwd {entry.cwd!r} is not a directory")
    return None


def _oauth_settings(value: Any, defaults: Mapping[str, Any], where: str) -> tuple[dict[str, Any] | None, list[Problem]]:
    if value is None or value is False:
        return None, []
    if value is True:
        value = {}
    if not isinstance(value, Mapping):
        return None, [Problem("error", "mcpsync.E001", f"{where}: 'oauth' must be true or a mapping")]
    problems = _unknown(unknown_keys(value, known=OAUTH_KEYS), OAUTH_KEYS, f"{where}.oauth")
    merged = {k: v for k, v in {**defaults, **value}.items() if k in OAUTH_KEYS}
    return merged, problems


def _check_entry(
    name: str, raw: Any, defaults: Mapping[str, Any], environ: Mapping[str, str] | None
) -> tuple[ServerSpec | None, list[Problem]]:
    where = f"MCP_SERVERS[{name!r}]"
    if not isinstance(raw, Mapping):
        return None, [Problem("error", "mcpsync.E001", f"{where}: an entry must be a mapping")]
    # The keys load_config knows (its settings, and other clients' keys it ignores quietly),
    # reported once, as a check: load_config's own warning is turned off below.
    problems = _unknown(unknown_keys(raw, also=EXTRA_KEYS), ENTRY_KEYS | EXTRA_KEYS, where)
    try:
        # Without this module's own keys (checked here), which no mcpServers file has.
        plain = {key: value for key, value in raw.items() if key not in ("options", "oauth")}
        entry = load_config({"mcpServers": {name: plain}}, name, environ=environ, warn_unknown=False)[name]
    except UnsetVariableError as exc:
        return None, [*problems, Problem("error", "mcpsync.E002", f"{where}: {exc}")]
    except ConfigError as exc:
        return None, [*problems, Problem("error", "mcpsync.E001", f"{where}: {exc}")]
    if not entry.is_remote:
        missing = _command_problem(entry, where)
        if missing is not None:
            problems.append(missing)
    default_options = {k: v for k, v in defaults.items() if k != "oauth"}
    options = raw.get("options") or {}
    if not isinstance(options, Mapping):
        problems.append(Problem("error", "mcpsync.E001", f"{where}: 'options' must be a mapping"))
        options = {}
    # The entry's own settings (timeout, mode, ...) win over MCP_DEFAULTS; its options over both.
    options = {**default_options, **entry.options, **options}
    if isinstance(options.get("client_info"), list):
        options["client_info"] = tuple(options["client_info"])  # JSON has no tuples
    oauth, oauth_problems = _oauth_settings(raw.get("oauth"), defaults.get("oauth") or {}, where)
    problems += oauth_problems
    if oauth is not None and not entry.is_remote:
        problems.append(Problem("error", "mcpsync.E001", f"{where}: 'oauth' needs a remote server ('url')"))
    try:
        # Building an unconnected client starts nothing (no process, thread or socket) and is
        # the one place that knows every option: a typo fails here, at startup.
        Client.from_server_config(entry, **options).close()
    except (TypeError, ValueError) as exc:
        problems.append(Problem("error", "mcpsync.E004", f"{where}: bad client option: {exc}",
                                "see the options of mcpsync.Client and MCP_DEFAULTS"))
    spec = ServerSpec(name=name, config=entry, options=options, oauth=oauth)
    return spec, problems


#: ``validate(token_key=NO_KEY_NEEDED)``: the token store needs no key (the app brought its own).
NO_KEY_NEEDED: Any = object()


def validate(
    servers: Any,
    defaults: Any = None,
    *,
    environ: Mapping[str, str] | None = None,
    token_key: Any = NO_KEY_NEEDED,
) -> tuple[dict[str, ServerSpec], list[Problem]]:
    """Check ``MCP_SERVERS`` and ``MCP_DEFAULTS``; the servers that parsed and every problem found.

    :param token_key: ``MCP_TOKEN_KEY``, checked when a server has ``oauth``
        (unless :data:`NO_KEY_NEEDED`).
    """
    if servers is None:
        return {}, []
    try:
        entries, _origin = read_servers(servers)
    except ConfigError as exc:
        return {}, [Problem("error", "mcpsync.E001", str(exc))]
    if defaults is None:
        defaults = {}
    if not isinstance(defaults, Mapping):
        return {}, [Problem("error", "mcpsync.E001", "MCP_DEFAULTS must be a mapping")]
    specs: dict[str, ServerSpec] = {}
    problems: list[Problem] = []
    for name, raw in entries.items():
        spec, found = _check_entry(str(name), raw, defaults, environ)
        problems += found
        if spec is not None:
            specs[spec.name] = spec
    if token_key is not NO_KEY_NEEDED and any(s.oauth is not None for s in specs.values()):
        from ._cipher import RecordCipher

        try:
            RecordCipher(token_key)
        except ConfigError as exc:
            problems.append(Problem("error", "mcpsync.E005", f"servers with 'oauth' need a token key: {exc}"))
    return specs, problems


class ServerSet:
    """The configured servers of one app, each behind a lazily made, fork-safe shared client.

    :param specs: from :func:`validate`.
    """

    def __init__(self, specs: Mapping[str, ServerSpec]) -> None:
        self.specs = dict(specs)
        self._shared = {
            name: SharedClient(_factory(spec)) for name, spec in self.specs.items() if spec.oauth is None
        }
        self._lock = threading.Lock()
        self._closed = False
        self._group: ClientGroup | None = None
        _fork.join(self)
        atexit.register(self.close)  # a worker or reloaded process leaves no server behind

    def after_fork_in_child(self) -> None:
        """A forked worker (:mod:`mcpsync._fork`): a fresh lock (a parent thread may have held
        it at the fork), and no group: the parent's holds the parent's pipes; the worker makes its own."""
        self._lock, self._group = threading.Lock(), None

    @classmethod
    def from_settings(cls, servers: Any, defaults: Any = None, token_key: Any = NO_KEY_NEEDED) -> ServerSet:
        """Validate the settings (see :func:`validate`) and build the set.

        :raises ServerSetError: the settings have at least one error (warnings are not raised).
        """
        specs, problems = validate(servers, defaults, token_key=token_key)
        for problem in problems:
            if problem.level == "warning":
                log.warning("%s", problem)
        errors = [p for p in problems if p.level == "error"]
        if errors:
            raise ServerSetError(errors)
        return cls(specs)

    def _known(self) -> str:
        return ", ".join(sorted(self.specs)) or "none"

    def spec(self, name: str) -> ServerSpec:
        """The spec of server *name*.

        :raises ConfigError: no such server.
        """
        if name not in self.specs:
            raise ConfigError(f"no MCP server {name!r} in MCP_SERVERS (servers: {self._known()})")
        return self.specs[name]

    def get_client(self, name: str) -> SharedClient:
        """The shared client of server *name* (one per process, connected on first use)."""
        spec = self.spec(name)
        if spec.oauth is not None:
            raise ConfigError(
                f"MCP server {name!r} is called on behalf of each user ('oauth'): "
                "use client_for_user(user, name) instead of get_client(name)"
            )
        return self._shared[name]

    def default_name(self) -> str:
        """The only server's name, for the one-server shortcut.

        :raises ConfigError: none, or several, servers are configured.
        """
        if len(self.specs) != 1:
            raise ConfigError(f"several (or no) MCP servers configured ({self._known()}): name one, mcp['name']")
        return next(iter(self.specs))

    def group(self) -> ClientGroup:
        """The app's own servers (not the per-user ``oauth`` ones) as one
        :class:`mcpsync.ClientGroup`, tools named ``server__tool``; one per process.

        Each entry's ``allow``, ``deny`` and ``annotations`` filter its tools.  The group
        owns its connections (made on its first call in each process) and is closed
        with the set.
        """
        with self._lock:
            if self._closed:
                raise ClientClosed("the MCP servers of this app were closed")
            if self._group is None:
                own = {name: spec for name, spec in self.specs.items() if spec.oauth is None}
                self._group = ClientGroup(
                    {name: _factory(spec) for name, spec in own.items()},
                    server_filters={
                        name: {"allow": s.config.allow, "deny": s.config.deny, "annotations": s.config.annotations}
                        for name, s in own.items()
                    },
                )
            return self._group

    def close(self) -> None:
        """Close every shared client and the group (idempotent, bounded: each close is)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            group = self._group
        for shared in self._shared.values():
            shared.close()
        if group is not None:
            group.close()
        atexit.unregister(self.close)

    def __repr__(self) -> str:
        return f"<ServerSet {sorted(self.specs)}>"


def _factory(spec: ServerSpec) -> Any:
    return lambda: Client.from_server_config(spec.config, **spec.options)


class ServerFront:
    """The ``mcp`` object of both integrations: the app's servers (:meth:`_servers`) by name.

    ``mcp["name"]`` is :meth:`get_client`; with one server configured, ``mcp.call_tool(...)``
    (any client method) goes to it; ``for name in mcp`` lists the names; :meth:`group` is
    every server as one.
    """

    def _servers(self) -> ServerSet:
        raise NotImplementedError

    def get_client(self, name: str | None = None) -> SharedClient:
        """The shared client of server *name* (default: the only one), connected on first use.

        One per server per process, shared by all threads; a forked worker gets its own.

        :raises mcpsync.config.ConfigError: no such server, or it is a per-user (``oauth``) one.
        """
        servers = self._servers()
        return servers.get_client(name if name is not None else servers.default_name())

    def __getitem__(self, name: str) -> SharedClient:
        return self.get_client(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._servers().specs)

    def __contains__(self, name: object) -> bool:
        return name in self._servers().specs

    def __len__(self) -> int:
        return len(self._servers().specs)

    def group(self) -> ClientGroup:
        """Every server as one :class:`~mcpsync.ClientGroup` (see :meth:`ServerSet.group`)."""
        return self._servers().group()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.get_client(), attr)
