"""The parts of :class:`mcpsync.ClientGroup` that are not routing: members, filters, threads.

A *member* is one server of the group: its client (made on first use by a
factory, and made again after its connection broke), its tool filter and the
listing calls in flight.  Every call on a member runs on a short-lived named
daemon thread, so the caller waits only until its own deadline, however long
a server takes to start, answer or die.
"""

from __future__ import annotations

import fnmatch
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar, Union

from mcpsync import _fork, types
from mcpsync.group.threads import spawn
from mcpsync.exceptions import ClientClosed, ConnectionClosed

if TYPE_CHECKING:
    from mcpsync.client.client import Client

T = TypeVar("T")
#: A server of a group: a client, or a callable that makes one (called again after a crash).
ClientSource = Union["Client", Callable[[], "Client"]]
#: An ``mcpServers`` document: a path, or the parsed dict.
Config = Union[str, "os.PathLike[str]", Mapping[str, Any]]
_CAMEL = re.compile(r"_([a-z])")


class ToolFilter:
    """Allow and deny globs (on the bare or the prefixed name) and required annotations.

    A tool is kept when no *allow* is given or one of its globs matches, no
    *deny* glob matches (deny wins), and every key of *annotations* is
    declared with that value (``{"readOnlyHint": True}``; snake_case keys work too).
    An allow glob that contains the prefix's *separator* (see :func:`separator`)
    matches the prefixed name only: ``github__*`` keeps the tools of the server
    ``github``, never a tool that another server named ``github__search``.
    Deny globs match both names.
    """

    def __init__(self, allow: Iterable[str] | None = None, deny: Iterable[str] | None = None,
                 annotations: Mapping[str, Any] | None = None) -> None:
        for value, what in ((allow, "allow"), (deny, "deny")):
            if isinstance(value, str):
                raise TypeError(f"{what} must be a list of names or globs, not a string")
        self.allow = None if allow is None else tuple(allow)
        self.deny = tuple(deny or ())
        self.annotations = {_CAMEL.sub(lambda m: m.group(1).upper(), k): v for k, v in (annotations or {}).items()}

    def keeps(self, tool: types.Tool, prefixed: str, separator: str = "") -> bool:
        """Whether *tool* (listed as *prefixed* by the group) passes this filter."""

        def matches(patterns: Iterable[str], bare: Callable[[str], bool]) -> bool:
            return any(fnmatch.fnmatchcase(prefixed, p) or (bare(p) and fnmatch.fnmatchcase(tool.name, p))
                       for p in patterns)

        if self.deny and matches(self.deny, lambda p: True):
            return False
        if self.allow is not None and not matches(self.allow, lambda p: not separator or separator not in p):
            return False
        if self.annotations:
            declared = types.to_wire(tool.annotations) if tool.annotations is not None else {}
            return all(declared.get(key) == value for key, value in self.annotations.items())
        return True


class Member:
    """One server of a group: its client, made by *factory* on first use."""

    def __init__(self, name: str, client: Client | None, factory: Callable[[], Client] | None,
                 tool_filter: ToolFilter) -> None:
        self.name = name
        self.filter = tool_filter
        self._client = client
        self._factory = factory
        self._lock = threading.Lock()
        self._inflight: dict[str, Future[Any]] = {}
        self._closed = False
        _fork.join(self)

    def after_fork_in_child(self) -> None:
        """Forked (:mod:`mcpsync._fork`): the parent's calls in flight have no thread here, and its lock may be held."""
        self._lock = threading.Lock()
        self._inflight = {}

    def client(self) -> Client:
        """The member's client (made now if there is none yet).

        :raises ClientClosed: the group was closed.
        """
        with self._lock:
            if self._closed:
                raise ClientClosed("the client group is closed")
            if self._client is None:
                assert self._factory is not None
                self._client = self._factory()
            return self._client

    def run(self, op: str, fn: Callable[[Client], T], *, shared: bool = False) -> Future[T]:
        """Run ``fn(client)`` on a thread of its own.

        :param shared: reuse a call of the same *op* still in flight (listings:
            a slow server is asked once at a time, not once per caller).
        """
        with self._lock:
            running = self._inflight.get(op) if shared else None
            if running is not None and not running.done():
                return running

            def call() -> T:
                client = self.client()
                try:
                    return fn(client)
                except ConnectionClosed as exc:
                    self._broken(client, exc)
                    raise

            future = spawn(f"group-{self.name}-{op}", call)
            if shared:
                self._inflight[op] = future
            return future

    def _broken(self, client: Client, exc: ConnectionClosed) -> None:
        """The connection died: the next use makes a new client (when there is a factory)."""
        if isinstance(exc, ClientClosed) or self._factory is None:
            return
        with self._lock:
            if self._client is not client:
                return
            self._client = None
        # Reaping the old server may take its close grace: not on the caller's time.
        spawn(f"group-{self.name}-close", client.close)

    def close(self) -> Future[None] | None:
        """Close the client (on a thread); later uses raise :class:`ClientClosed`."""
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
        return None if client is None else spawn(f"group-{self.name}-close", client.close)


def is_config(value: object) -> bool:
    """Whether *value* is an ``mcpServers`` document rather than a mapping of clients."""
    if isinstance(value, (str, os.PathLike)):
        return True
    return isinstance(value, Mapping) and any(isinstance(value.get(key), Mapping) for key in ("mcpServers", "servers"))


def member(name: str, source: ClientSource) -> Member:
    """The member for a client, or for a callable making clients."""
    from mcpsync.client.client import Client

    if isinstance(source, Client) or not callable(source):
        return Member(name, source, None, ToolFilter())
    return Member(name, None, source, ToolFilter())


def config_members(source: Config, servers: Sequence[str] | None, options: dict[str, Any]) -> dict[str, Member]:
    """A member per entry of an ``mcpServers`` document (or of its entries *servers*)."""
    from mcpsync.client.client import Client
    from mcpsync.config import load_config, read_document

    if servers is None:
        entries = load_config(source)
    else:  # the file is read and parsed once; only the chosen entries are expanded
        document = read_document(source)[0]
        entries = {n: load_config(document, n)[n] for n in servers}
    make = Client.from_server_config
    return {name: Member(name, None, lambda entry=entry: make(entry, **options),  # type: ignore[misc]
                         ToolFilter(entry.allow, entry.deny, entry.annotations)) for name, entry in entries.items()}


def separator(prefix: str) -> str:
    """The literal text between ``{server}`` and ``{tool}`` of a prefix template (``"__"``).

    ``""`` when the template has no ``{server}`` or nothing between the two.
    """
    found = re.search(r"\{server\}(.*?)\{tool\}|\{tool\}(.*?)\{server\}", prefix)
    return "" if found is None else found.group(1) or found.group(2) or ""


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex for the URIs an RFC 6570 template can make (each expression matches any run)."""
    parts = re.split(r"\{[^}]*\}", template)
    return re.compile(".+?".join(re.escape(part) for part in parts))
