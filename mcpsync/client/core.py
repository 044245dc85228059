"""What the feature functions need of a client (:class:`Core`), and what they share.

Every feature (tools, resources, prompts, tasks, skills, apps) is a module of plain
functions over :class:`Core`, which :class:`~mcpsync.Client` is; the client binds
them as its methods.  Each public call makes one
:class:`~mcpsync.rpc.deadline.Deadline` (``client._options.deadline(timeout)``) and sends every
request through the one internal call, :meth:`Core._call`: it resolves the
connection once (a lazy connect included), checks the capability, runs the policies
(interceptors, retries, tracing) and answers ``input_required`` rounds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from mcpsync import types
from mcpsync.client.cache import ResultCache
from mcpsync.client.options import ClientOptions, TimeoutArg
from mcpsync.exceptions import CapabilityNotSupported, ProtocolError
from mcpsync.rpc.deadline import Deadline
from mcpsync.rpc.session import ProgressCallback

if TYPE_CHECKING:
    from mcpsync.client.connection import Connection
    from mcpsync.client.listeners import Handle

__all__ = ["Core", "TaskWaiters", "cached", "paginate", "require"]

_MAX_PAGES = 10_000


class TaskWaiters:
    """The events of threads sleeping between polls: :meth:`Client.close` wakes them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: set[threading.Event] = set()

    def add(self, event: threading.Event) -> None:
        with self._lock:
            self._events.add(event)

    def discard(self, event: threading.Event) -> None:
        with self._lock:
            self._events.discard(event)

    def wake_all(self) -> None:
        with self._lock:
            events = list(self._events)
        for event in events:
            event.set()


class Core(Protocol):
    """The client as its feature functions see it."""

    _options: ClientOptions
    _tools: dict[str, types.Tool]
    _cache: ResultCache
    _resource_subscriptions: set[str]
    _task_waiters: TaskWaiters

    @property
    def closed(self) -> bool: ...

    def _connection(self, deadline: Deadline | None = None) -> Connection: ...

    def _call(self, method: str, params: dict[str, Any] | None, deadline: Deadline, *,
              capability: str | None = None, progress: ProgressCallback | None = None,
              retry: bool | None = None, accept: tuple[str, ...] = (), rounds: bool = True) -> dict[str, Any]: ...

    def _sync_background(self, deadline: Deadline | None = None) -> None: ...

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None: ...

    def on(self, method: str, callback: Callable[[dict[str, Any]], Any]) -> Handle: ...

    def list_tools(self, *, timeout: TimeoutArg = ..., cache: bool = True) -> list[types.Tool]: ...

    def list_resources(self, *, timeout: TimeoutArg = ..., cache: bool = True) -> list[types.Resource]: ...

    def read_resource(self, uri: str, *, timeout: TimeoutArg = ..., cache: bool = True) -> types.ReadResourceResult: ...


def require(capabilities: types.ServerCapabilities, capability: str, method: str) -> None:
    """Raise :class:`CapabilityNotSupported` unless the server declared *capability* (``a.b``: nested)."""
    head, _, sub = capability.partition(".")
    value = getattr(capabilities, head, None)
    if value is not None and sub:
        value = value.get(sub) if isinstance(value, dict) else getattr(value, sub, None)
    if value is None or value is False:
        raise CapabilityNotSupported(capability, method)


def cached(client: Core, method: str, key: Hashable, params: dict[str, Any] | None, deadline: Deadline,
           capability: str, cache: bool, *, rounds: bool = True) -> dict[str, Any]:
    """The raw result of *method*: the one cached under *key* when *cache* allows, else the
    server's (kept for its ``ttlMs``, unless an invalidation overtook the reply)."""
    raw = client._cache.get(method, key) if cache else None
    if raw is None:
        generation = client._cache.generation
        raw = client._call(method, params, deadline, capability=capability, rounds=rounds)
        client._cache.put(method, key, raw, generation)
    return raw


def paginate(client: Core, method: str, key: str, cls: type[Any], capability: str, deadline: Deadline,
             cache: bool) -> list[Any]:
    """Every page of a list *method*, by the call's one deadline; cached pages reused when *cache*.

    :raises ProtocolError: for a repeated cursor or more than 10 000 pages.
    """
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(_MAX_PAGES):
        raw = cached(client, method, cursor, {"cursor": cursor} if cursor is not None else None, deadline,
                     capability, cache, rounds=False)
        page = types.from_wire(cls, raw)
        items.extend(getattr(page, key))
        cursor = page.next_cursor
        if cursor is None:
            return items
        if cursor in seen:
            raise ProtocolError(f"{method}: server repeated pagination cursor {cursor[:80]!r}")
        seen.add(cursor)
    raise ProtocolError(f"{method}: more than {_MAX_PAGES} pages")
