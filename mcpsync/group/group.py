"""Several MCP servers as one: :class:`ClientGroup` (importable from ``mcpsync``).

::

    from mcpsync import ClientGroup

    with ClientGroup.from_config("mcp.json", deny=["*delete*"]) as group:
        for tool in group.list_tools():           # "github__search", "files__read", ...
            print(tool.name)
        print(group.call_tool("files__read", {"path": "README.md"}).text)

Servers connect on first use, in parallel.  A server that is down or slow
never breaks the group: its tools are left out, its error is in
:attr:`ClientGroup.errors`, and it is asked again on a later call.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import wait
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from mcpsync import types
from mcpsync.client.options import DEFAULT, Default, TimeoutArg
from mcpsync.exceptions import (CapabilityNotSupported, ClientClosed, McpError, ProtocolError, RequestTimeout,
                                TransportError)
from mcpsync.group.errors import UnknownName
from mcpsync.group.members import (ClientSource, Config, Member, ToolFilter, config_members, is_config, member,
                                   separator, template_pattern)
from mcpsync.rpc.deadline import Deadline

if TYPE_CHECKING:
    from mcpsync.client.client import Client

log = logging.getLogger(__name__)

T = TypeVar("T")
_FILTERED = " (left out by the group's allow/deny/annotations filters)"
#: Seconds close() waits for all the clients to close (each is bounded by its own grace).
_CLOSE_BOUND = 15.0


class ClientGroup:
    """Several MCP servers used as one; shared by threads.

    ::

        group = ClientGroup({"demo": mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"])})
        tools = group.list_tools()                        # names "demo__add", ...
        group.call_tool("demo__add", {"a": 1, "b": 2})
        group["demo"].list_resources()                    # one server's client

    :param clients_or_config: a mapping of server name to :class:`~mcpsync.Client`
        (or to a callable making one, which also replaces a client whose
        server died), or an ``mcpServers`` document (path or dict, as
        :meth:`from_config` takes).
    :param prefix: how a server's tool and prompt names are shown; ``{server}``
        and ``{tool}`` are replaced.  Names that still collide get ``_2``, ``_3``...
    :param allow: globs of the tools to keep, on the bare or the prefixed name;
        a glob that contains the prefix's separator (``__`` in the default
        ``{server}__{tool}``) matches prefixed names only.
    :param deny: globs of tools to leave out; deny wins over allow.
    :param annotations: keep only tools declaring these annotation values,
        e.g. ``{"readOnlyHint": True}``.
    :param timeout: default deadline of each group call, in seconds; ``None``
        waits as long as the clients do.
    :param server_filters: per-server ``allow``/``deny``/``annotations`` (as in an
        ``mcpServers`` entry), by server name, applied before the group's own filters.

    A tool that was filtered out cannot be called through the group.
    """

    def __init__(self, clients_or_config: Mapping[str, ClientSource] | Config, *, prefix: str = "{server}__{tool}",
                 allow: Iterable[str] | None = None, deny: Iterable[str] | None = None,
                 annotations: Mapping[str, Any] | None = None, timeout: float | None = 30.0,
                 server_filters: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        if "{tool}" not in prefix:
            raise ValueError("prefix must contain {tool}")
        prefix.format(server="s", tool="t")  # a bad template fails here, not at first use
        self._prefix = prefix
        self._separator = separator(prefix)
        self._filter = ToolFilter(allow, deny, annotations)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._errors: dict[str, McpError] = {}
        self._tools: dict[str, tuple[Member, str]] = {}
        self._prompts: dict[str, tuple[Member, str]] = {}
        self._hidden: set[str] = set()
        self._uris: dict[str, Member] = {}
        self._templates: list[tuple[re.Pattern[str], Member]] = []
        self._closed = False
        if is_config(clients_or_config) or not isinstance(clients_or_config, Mapping):
            options = {"timeout": timeout} if timeout is not None else {}
            self._members = config_members(clients_or_config, None, options)
        else:
            self._members = {name: member(name, source) for name, source in clients_or_config.items()}
        for name, wanted in (server_filters or {}).items():
            if name not in self._members:
                raise ValueError(f"server_filters names {name!r}, which is not a server of the group")
            self._members[name].filter = ToolFilter(wanted.get("allow"), wanted.get("deny"), wanted.get("annotations"))

    @classmethod
    def from_config(cls, path_or_dict: Config, *, servers: Sequence[str] | None = None,
                    prefix: str = "{server}__{tool}", allow: Iterable[str] | None = None,
                    deny: Iterable[str] | None = None, annotations: Mapping[str, Any] | None = None,
                    timeout: float | None = 30.0, **options: Any) -> ClientGroup:
        """A group of the servers of an ``mcpServers`` file or dict (see :mod:`mcpsync.config`).

        An entry's ``allow``, ``deny`` and ``annotations`` keys filter that
        server's tools, on top of the group's own filters.

        :param servers: use only these entries (default: all).
        :param options: passed to each client (``timeout=`` aside, which is the group's).
        :raises mcpsync.config.ConfigError: bad file or entry, unknown server,
            unset variable.
        """
        group = cls({}, prefix=prefix, allow=allow, deny=deny, annotations=annotations, timeout=timeout)
        if timeout is not None:
            options.setdefault("timeout", timeout)
        group._members = config_members(path_or_dict, servers, options)
        return group

    # -- servers -------------------------------------------------------------

    @property
    def servers(self) -> list[str]:
        """The servers' names, in order."""
        return list(self._members)

    def __getitem__(self, server: str) -> Client:
        """The client of *server* (made now if needed; it connects on first use).

        :raises UnknownName: no such server (also a ``KeyError``).
        """
        return self._member(server).client()

    def __contains__(self, server: object) -> bool:
        return server in self._members

    @property
    def errors(self) -> dict[str, McpError]:
        """Server name -> the error of its last failed attempt (a copy).

        A server leaves this mapping when a later call to it succeeds.
        """
        with self._lock:
            return dict(self._errors)

    def connect(self, *, timeout: TimeoutArg = DEFAULT) -> ClientGroup:
        """Connect every server now, in parallel; failures go to :attr:`errors`."""
        self._gather("connect", lambda client, t: client.connect(), timeout)
        return self

    def route(self, name: str, *, timeout: TimeoutArg = DEFAULT) -> tuple[str, str]:
        """``(server, tool)`` for a tool name as :meth:`list_tools` shows it.

        :raises UnknownName: no such tool, or it was filtered out.
        """
        member, bare = self._resolve("tool", name, self.list_tools, self._deadline(timeout))
        return member.name, bare

    # -- tools ---------------------------------------------------------------

    def list_tools(self, *, timeout: TimeoutArg = DEFAULT) -> list[types.Tool]:
        """The tools of every server that answers, with prefixed names; filters applied.

        Servers that fail or miss the deadline are left out (see :attr:`errors`).
        """
        listed = self._gather("tools/list", lambda client, t: client.list_tools(timeout=t), timeout)
        named = self._named(listed)
        tools: list[types.Tool] = []
        routes: dict[str, tuple[Member, str]] = {}
        hidden: set[str] = set()
        for member, tool, prefixed in named:
            if all(f.keeps(tool, prefixed, self._separator) for f in (self._filter, member.filter)):
                tools.append(attrs.evolve(tool, name=prefixed))
                routes[prefixed] = (member, tool.name)
            else:
                hidden.add(prefixed)
        with self._lock:
            self._tools, self._hidden = routes, hidden
        return tools

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: TimeoutArg = DEFAULT,
                  **kwargs: Any) -> types.CallToolResult:
        """Call a tool by the name :meth:`list_tools` gave it; see :meth:`mcpsync.Client.call_tool`.

        :raises UnknownName: no server has that tool, or it was filtered out.
        """
        deadline = self._deadline(timeout)
        member, bare = self._resolve("tool", name, self.list_tools, deadline)

        def call(client: Client) -> types.CallToolResult:
            return client.call_tool(bare, arguments, timeout=deadline or DEFAULT, **kwargs)

        return self._one(member, "tools/call", call, deadline)

    # -- prompts -------------------------------------------------------------

    def list_prompts(self, *, timeout: TimeoutArg = DEFAULT) -> list[types.Prompt]:
        """The prompts of every server that answers, with prefixed names."""
        listed = self._gather("prompts/list", lambda client, t: client.list_prompts(timeout=t), timeout)
        named = self._named(listed)
        with self._lock:
            self._prompts = {prefixed: (member, prompt.name) for member, prompt, prefixed in named}
        return [attrs.evolve(prompt, name=prefixed) for _, prompt, prefixed in named]

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None, *,
                   timeout: TimeoutArg = DEFAULT) -> types.GetPromptResult:
        """Render a prompt by the name :meth:`list_prompts` gave it."""
        deadline = self._deadline(timeout)
        member, bare = self._resolve("prompt", name, self.list_prompts, deadline)
        return self._one(member, "prompts/get", lambda c: c.get_prompt(bare, arguments, timeout=deadline or DEFAULT),
                         deadline)

    # -- resources -----------------------------------------------------------

    def list_resources(self, *, timeout: TimeoutArg = DEFAULT) -> list[types.Resource]:
        """The resources of every server that answers; names prefixed, URIs as they are."""
        listed = self._gather("resources/list", lambda c, t: c.list_resources(timeout=t), timeout)
        with self._lock:
            self._uris = {res.uri: member for member, items in listed for res in items}
        return self._prefixed(listed)

    def list_resource_templates(self, *, timeout: TimeoutArg = DEFAULT) -> list[types.ResourceTemplate]:
        """The resource templates of every server that answers; names prefixed."""
        listed = self._gather("resources/templates/list", lambda c, t: c.list_resource_templates(timeout=t), timeout)
        with self._lock:
            self._templates = [(template_pattern(t.uri_template), m) for m, items in listed for t in items]
        return self._prefixed(listed)

    def _prefixed(self, listed: list[tuple[Member, list[Any]]]) -> list[Any]:
        return [attrs.evolve(item, name=self._prefix.format(server=member.name, tool=item.name))
                for member, items in listed for item in items]

    def read_resource(self, uri: str, *, server: str | None = None,
                      timeout: TimeoutArg = DEFAULT) -> types.ReadResourceResult:
        """Read *uri* from the server that listed it (or matches a template), or from *server*.

        :raises UnknownName: no server listed the URI or a template matching it.
        """
        deadline = self._deadline(timeout)
        member = self._member(server) if server is not None else self._resource_member(uri, deadline)
        return self._one(member, "resources/read", lambda c: c.read_resource(uri, timeout=deadline or DEFAULT),
                         deadline)

    def _resource_member(self, uri: str, deadline: Deadline | None) -> Member:
        for attempt in range(2):
            with self._lock:
                member = self._uris.get(uri) or next((m for p, m in self._templates if p.fullmatch(uri)), None)
            if member is not None:
                return member
            if attempt == 0:
                self.list_resources(timeout=deadline or DEFAULT)
                self.list_resource_templates(timeout=deadline or DEFAULT)
        raise UnknownName("resource", uri, " in any server of the group (pass server= to choose one)")

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close every client, in parallel; idempotent and bounded in time."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        closing = [f for f in (m.close() for m in self._members.values()) if f is not None]
        wait(closing, timeout=_CLOSE_BOUND)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> ClientGroup:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ClientGroup({self.servers!r})"

    # -- plumbing ------------------------------------------------------------

    def _deadline(self, timeout: TimeoutArg) -> Deadline | None:
        """The call's deadline (``None``: none of the group's own; each client's default applies)."""
        if self._closed:
            raise ClientClosed("the client group is closed")
        if isinstance(timeout, Deadline):
            return timeout
        seconds = self._timeout if isinstance(timeout, Default) else timeout
        return None if seconds is None else Deadline(seconds)

    def _member(self, server: str) -> Member:
        member = self._members.get(server)
        if member is None:
            raise UnknownName("server", server, f" in the group (servers: {', '.join(self._members) or 'none'})")
        return member

    def _gather(self, op: str, fn: Callable[[Client, TimeoutArg], Any],
                timeout: TimeoutArg) -> list[tuple[Member, list[Any]]]:
        """``fn(client, seconds_left)`` on every server at once; what answered in time, in order."""
        deadline = self._deadline(timeout)
        futures = {m: m.run(op, lambda c: fn(c, deadline or DEFAULT), shared=True) for m in self._members.values()}
        wait(futures.values(), timeout=None if deadline is None else deadline.remaining())
        answered: list[tuple[Member, list[Any]]] = []
        for member, future in futures.items():
            if not future.done():
                self._failed(member, RequestTimeout(f"server {member.name!r}: no {op} answer in time", method=op))
                continue
            exc = future.exception()
            if exc is None:
                self._succeeded(member)
                answered.append((member, future.result() or []))
            elif isinstance(exc, CapabilityNotSupported):
                self._succeeded(member)  # answers fine; simply has none of these
            elif isinstance(exc, McpError):
                self._failed(member, exc)
            else:
                raise exc
        return answered

    def _one(self, member: Member, op: str, fn: Callable[[Client], T], deadline: Deadline | None) -> T:
        """``fn(client)`` on one server, within *deadline*; its errors reach the caller."""
        future = member.run(op, fn)
        done, _ = wait([future], timeout=None if deadline is None else deadline.remaining())
        if not done:
            raise RequestTimeout(f"server {member.name!r}: no {op} answer in time", method=op)
        try:
            result = future.result()
        except (TransportError, ProtocolError) as exc:
            self._failed(member, exc)  # the server is in trouble, not just this call
            raise
        self._succeeded(member)
        return result

    def _named(self, listed: list[tuple[Member, list[Any]]]) -> list[tuple[Member, Any, str]]:
        """Each item with its prefixed name; a name that collides gets ``_2``, ``_3``..."""
        plain = [(member, item, self._prefix.format(server=member.name, tool=item.name))
                 for member, items in listed for item in items]
        taken = {name for _, _, name in plain}
        seen: set[str] = set()
        named = []
        for member, item, name in plain:
            if name in seen:
                n = 2
                while f"{name}_{n}" in taken:
                    n += 1
                name = f"{name}_{n}"
                taken.add(name)
            seen.add(name)
            named.append((member, item, name))
        return named

    def _resolve(self, kind: str, name: str, relist: Callable[..., Any], deadline: Deadline | None) -> tuple[Member, str]:
        """Where *name* goes; listed again once when it is not known (yet)."""
        for attempt in range(2):
            with self._lock:
                # Re-read the attribute: a listing replaces the whole dict.
                current = self._tools if kind == "tool" else self._prompts
                found = current.get(name)
                hidden = kind == "tool" and name in self._hidden
            if found is not None:
                return found
            if hidden:
                raise UnknownName(kind, name, _FILTERED)
            if attempt == 0:
                relist(timeout=deadline or DEFAULT)
        down = f" (servers failing: {', '.join(self.errors)})" if self.errors else ""
        raise UnknownName(kind, name, f" in any server of the group{down}")

    def _succeeded(self, member: Member) -> None:
        with self._lock:
            self._errors.pop(member.name, None)

    def _failed(self, member: Member, exc: McpError) -> None:
        log.warning("server %r of the group failed: %s", member.name, exc)
        with self._lock:
            self._errors[member.name] = exc
