"""Server entries in the ``mcpServers`` JSON format of Claude Desktop, Cursor and VS Code.

::

    {"mcpServers": {
        "demo":   {"command": "python", "args": ["-m", "mcpsync.demo"]},
        "remote": {"url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${API_TOKEN}"}}
    }}

A *stdio* entry has ``command`` (and optionally ``args``, ``env``, ``cwd``,
``closeGrace``, ``terminateGrace``); a *remote* entry has ``url`` (and
optionally ``headers`` and ``type`` or ``transport``: ``"http"``,
``"streamable-http"``, ``"sse"`` or ``"websocket"``).  Either may set
``timeout`` and ``discoverTimeout`` (seconds), ``mode`` (the protocol era:
``"auto"``, ``"legacy"``, ``"modern"`` or a protocol version), and ``apps: true``
(advertise MCP Apps, see ``docs/apps.rst``).  VS Code's top-level key
``"servers"`` is accepted too.  Keys other clients use (``disabled``,
``autoApprove``, ...) are ignored; any other key warns with
:class:`ConfigWarning`, naming the key we know that it resembles.

Environment variables are expanded in ``command``, ``args``, ``env`` values,
``cwd``, ``url`` and ``headers`` values, in the forms the common clients use:
``${VAR}`` and ``${VAR:-default}`` (Claude Code), ``${env:VAR}`` (VS Code,
Cursor) and ``${userHome}`` (Cursor, VS Code).  ``$$`` is a literal ``$``.
A variable that is unset and has no default raises
:class:`UnsetVariableError`; an unknown form such as VS Code's
``${input:...}`` raises :class:`ConfigError`.  Nothing is ever expanded
inside keys, and a bare ``$VAR`` without braces is left as it is.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import difflib
import json
import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from mcpsync.exceptions import McpError
from mcpsync.types.protocol import HANDSHAKE_VERSIONS, MODERN_VERSIONS

__all__ = ["ConfigError", "ConfigWarning", "ServerConfig", "UnsetVariableError", "expand", "load_config"]

#: ``type``/``transport`` values and the transport they mean.
_REMOTE_TYPES = {"http": "auto", "streamable-http": "streamable-http", "streamablehttp": "streamable-http",
                 "sse": "sse", "websocket": "websocket", "ws": "websocket"}
_PATTERN = re.compile(r"\$\$|\$\{([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Passed as *environ*: leave ``${...}`` as written (listing a file must not need its secrets).
_VERBATIM: Mapping[str, str] = {}

#: Entry keys and the client option each sets (seconds; ``null`` is the default).
_SETTINGS = {"timeout": "timeout", "discoverTimeout": "discover_timeout", "closeGrace": "close_grace",
             "terminateGrace": "terminate_grace"}
_STDIO_ONLY = frozenset({"closeGrace", "terminateGrace"})
#: The values of ``mode`` (the client's ``mode=``): an era, or a protocol version to pin.
MODES = ("auto", "legacy", "modern", *MODERN_VERSIONS, *HANDSHAKE_VERSIONS)
#: The keys of an entry mcpsync reads.
ENTRY_KEYS = frozenset({"command", "args", "env", "cwd", "url", "serverUrl", "headers", "type",
                        "transport", "allow", "deny", "annotations", "apps", "mode", *_SETTINGS})
#: Keys other MCP clients put in the same entries; a shared file must not warn about them.
_FOREIGN = frozenset({"disabled", "enabled", "autoApprove", "alwaysAllow", "disabledTools", "description", "name",
                      "envFile", "tools", "trust", "includeTools", "excludeTools", "oauth", "authProviderType",
                      "httpUrl", "gallery", "version", "id", "icon", "notes", "scope", "dev"})


class ConfigError(McpError, ValueError):
    """The configuration is not valid (bad JSON, unknown server, bad entry)."""


class ConfigWarning(UserWarning):
    """An entry has a key that mcpsync does not know (ignored); probably a typo."""


class UnsetVariableError(ConfigError):
    """An environment variable used in the configuration is not set.

    :attr:`variable` is its name; :attr:`where` says which field used it.
    """

    def __init__(self, variable: str, where: str) -> None:
        super().__init__(
            f"environment variable {variable} is not set (used in {where}); set it, or write"
            f" ${{{variable}:-default}} to give a default"
        )
        self.variable = variable
        self.where = where


def _names_only(values: Mapping[str, str] | None) -> str:
    # env and headers carry API keys and tokens once variables are expanded: a repr (a log
    # line, a debugger, Django's error page) shows which names are set, never the values.
    return "None" if values is None else repr({name: "***" for name in values})


@attrs.frozen
class ServerConfig:
    """One server entry, with environment variables already expanded."""

    #: The entry's key in ``mcpServers``.
    name: str
    #: ``"stdio"``, or for remote servers ``"auto"``, ``"streamable-http"``,
    #: ``"sse"`` or ``"websocket"``.
    transport: str
    command: str | None = None
    args: list[str] = attrs.field(factory=list)
    env: dict[str, str] | None = attrs.field(default=None, repr=_names_only)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = attrs.field(default=None, repr=_names_only)
    #: Tool filters for :class:`mcpsync.ClientGroup`: name globs and required annotations.
    allow: list[str] | None = None
    deny: list[str] | None = None
    annotations: dict[str, Any] | None = None
    #: Client options the entry sets: ``timeout``, ``discover_timeout``,
    #: ``close_grace``, ``terminate_grace`` (from ``timeout``,
    #: ``discoverTimeout``, ``closeGrace``, ``terminateGrace``), ``mode`` and ``apps``.
    options: dict[str, Any] = attrs.field(factory=dict)

    @property
    def is_remote(self) -> bool:
        """Whether the server is reached over the network (``url``) rather than spawned."""
        return self.url is not None

    @property
    def target(self) -> str:
        """The command line or the URL (header values and ``env`` left out)."""
        if self.url is not None:
            return self.url
        return " ".join([self.command or "", *self.args])

    def describe(self) -> str:
        """One line for listings: the command line, or the URL and its transport."""
        if self.url is not None:
            return f"{self.url} ({self.transport})"
        return self.target


def expand(value: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """Expand ``${VAR}``, ``${VAR:-default}``, ``${env:VAR}``, ``${userHome}`` and ``$$``.

    >>> from mcpsync.config import expand
    >>> expand("${HOME_DIR:-/tmp}/x", "cwd", {})
    '/tmp/x'
    >>> expand("Bearer ${env:TOKEN}", "headers.Authorization", {"TOKEN": "t0k"})
    'Bearer t0k'

    :param where: the field, for the error message.
    :raises UnsetVariableError: a variable is unset and has no default.
    :raises ConfigError: an expression this module does not know.
    """
    if environ is _VERBATIM:
        return value
    env = os.environ if environ is None else environ

    def replace(match: re.Match[str]) -> str:
        body = match.group(1)
        if body is None:
            return "$"
        name, sep, default = body.partition(":-")
        if name == "userHome" and not sep:
            return str(Path.home())
        name = name.removeprefix("env:")
        if not _NAME.match(name):
            raise ConfigError(
                f"unsupported expression ${{{body}}} in {where}: use ${{VAR}}, ${{VAR:-default}}"
                " or ${env:VAR}"
            )
        if name in env:
            return env[name]
        if sep:
            return default
        raise UnsetVariableError(name, where)

    return _PATTERN.sub(replace, value)


def _checked(value: Any, field: str, where: str, environ: Mapping[str, str] | None, kind: type = str) -> Any:
    """*value* with variables expanded, if it is a non-empty string (*kind* ``str``), a list of
    strings (``list``) or an object of strings (``dict``)."""
    if kind is str and isinstance(value, str) and value:
        return expand(value, f"{where}.{field}", environ)
    if kind is list and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [expand(v, f"{where}.{field}", environ) for v in value]
    if kind is dict and isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return {k: expand(v, f"{where}.{field}.{k}", environ) for k, v in value.items()}
    shapes: dict[type, str] = {str: "a non-empty string", list: "a list of strings", dict: "an object of strings"}
    raise ConfigError(f"{where}: {field!r} must be {shapes[kind]}")


def _filters(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """The ``allow``, ``deny`` (name globs) and ``annotations`` keys of an entry."""
    found = {key: raw[key] for key in ("allow", "deny") if raw.get(key) is not None}
    for key, value in found.items():
        _checked(value, key, where, _VERBATIM, list)
    if raw.get("annotations") is not None:
        if not isinstance(raw["annotations"], dict):
            raise ConfigError(f"{where}: 'annotations' must be an object")
        found["annotations"] = raw["annotations"]
    return found


def unknown_keys(entry: Mapping[str, Any], also: frozenset[str] = frozenset(),
                 known: frozenset[str] | None = None) -> list[tuple[str, str | None]]:
    """The keys of an ``mcpServers`` entry that neither mcpsync nor other MCP clients use,
    each with the known key it resembles (``None``: none).

    :func:`load_config` warns about these (:class:`ConfigWarning`); an integration that
    reports them its own way (Django's system checks) passes ``warn_unknown=False``.

    :param also: keys the caller reads besides these (known, and offered as hints).
    :param known: the keys of another mapping than an entry, instead of all those.
    """
    names = sorted(ENTRY_KEYS | also if known is None else known)
    found: list[tuple[str, str | None]] = []
    for key in entry:
        if key in names or (known is None and key in _FOREIGN):
            continue
        name = str(key)
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        if not close:
            close = [k for k in names if k.lower() == name.replace("_", "").lower()]
        found.append((name, close[0] if close else None))
    return found


def _settings(raw: dict[str, Any], where: str, stdio: bool, warn: bool = True) -> dict[str, Any]:
    """The entry's client options; unknown keys warn, with the known key they resemble."""
    for key, close in unknown_keys(raw) if warn else ():
        hint = f" (did you mean {close!r}?)" if close else ""
        warnings.warn(f"{where}: unknown key {key!r} ignored{hint}", ConfigWarning, stacklevel=5)
    options: dict[str, Any] = {}
    if raw.get("apps") not in (None, False, True):
        raise ConfigError(f"{where}: 'apps' must be true or false, got {raw['apps']!r}")
    if raw.get("apps"):
        options["apps"] = True
    if raw.get("mode") is not None:
        if raw["mode"] not in MODES:
            raise ConfigError(f"{where}: 'mode' must be one of {', '.join(MODES)}, got {raw['mode']!r}")
        options["mode"] = raw["mode"]
    for key, option in _SETTINGS.items():
        if key not in raw:
            continue
        value = raw[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise ConfigError(f"{where}: {key!r} must be a number of seconds (or null), got {value!r}")
        if key in _STDIO_ONLY and not stdio:
            raise ConfigError(f"{where}: {key!r} applies to stdio servers (entries with 'command')")
        if value is None and option != "timeout":
            continue  # null means the default; only timeout=None means "wait forever"
        options[option] = None if value is None else float(value)
    return options


def _entry(name: str, raw: Any, environ: Mapping[str, str] | None, warn: bool = True) -> ServerConfig:
    where = f"server {name!r}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: an entry must be a JSON object")
    common: dict[str, Any] = {"name": name, **_filters(raw, where),
                              "options": _settings(raw, where, stdio="command" in raw, warn=warn)}

    def optional(key: str, kind: type) -> Any:
        return None if raw.get(key) is None else _checked(raw[key], key, where, environ, kind)

    kind = raw.get("transport", raw.get("type"))
    if kind is not None and not isinstance(kind, str):
        raise ConfigError(f"{where}: 'type' must be a string")
    if "command" in raw:
        if kind not in (None, "stdio"):
            raise ConfigError(f"{where}: has 'command' but type {kind!r}; stdio entries need no type")
        return ServerConfig(transport="stdio", command=_checked(raw["command"], "command", where, environ),
                            args=_checked(raw.get("args", []), "args", where, environ, list),
                            env=optional("env", dict), cwd=optional("cwd", str), **common)
    if "url" in raw or "serverUrl" in raw:
        url = _checked(raw.get("url", raw.get("serverUrl")), "url", where, environ)
        if kind is not None and kind.lower() not in _REMOTE_TYPES:
            raise ConfigError(f"{where}: unknown type {kind!r}; use one of {', '.join(sorted(_REMOTE_TYPES))}")
        websocket = url.startswith(("ws://", "wss://"))
        transport = _REMOTE_TYPES[kind.lower()] if kind is not None else "websocket" if websocket else "auto"
        return ServerConfig(transport=transport, url=url, headers=optional("headers", dict), **common)
    raise ConfigError(f"{where}: needs 'command' (stdio) or 'url' (remote)")


def read_document(source: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """The JSON object of a file (``~`` expanded) or a mapping as it is, and where it came from.

    :raises ConfigError: unreadable file, bad JSON, not an object.
    """
    if isinstance(source, Mapping):
        return source, "the configuration"
    path = Path(source).expanduser()  # "~/.cursor/mcp.json", as the shell would
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object")
    return data, str(path)


def _servers(source: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    data, origin = read_document(source)
    servers = data.get("mcpServers", data.get("servers"))
    if servers is None:
        raise ConfigError(f"{origin} has no 'mcpServers' (or 'servers') object")
    if not isinstance(servers, dict):
        raise ConfigError(f"{origin}: 'mcpServers' must be a JSON object")
    return servers, origin


def load_config(source: str | os.PathLike[str] | Mapping[str, Any], name: str | None = None, *,
                environ: Mapping[str, str] | None = None, expand_variables: bool = True,
                warn_unknown: bool = True) -> dict[str, ServerConfig]:
    """Parse a configuration file (or an already loaded dict).

    >>> from mcpsync.config import load_config
    >>> servers = load_config({"mcpServers": {"demo": {"command": "python", "args": ["-m", "mcpsync.demo"]}}})
    >>> servers["demo"].describe()
    'python -m mcpsync.demo'

    :param name: parse (and expand variables in) only this entry.
    :param environ: the variables to expand (default ``os.environ``).
    :param expand_variables: ``False`` keeps ``${...}`` as written (for listings).
    :param warn_unknown: ``False``: no :class:`ConfigWarning` for unknown keys (a caller
        that reports :func:`unknown_keys` itself).
    :raises ConfigError: unreadable file, bad JSON, bad entry or unknown *name*.
    """
    if not expand_variables:
        environ = _VERBATIM
    servers, origin = _servers(source)
    if name is not None:
        if name not in servers:
            known = ", ".join(sorted(servers)) or "none"
            raise ConfigError(f"no server {name!r} in {origin} (servers: {known})")
        return {name: _entry(name, servers[name], environ, warn_unknown)}
    return {key: _entry(key, entry, environ, warn_unknown) for key, entry in servers.items()}
