"""The parts of :class:`mcpsync.ClientGroup` that are not routing: members, filters, threads.

A *member* is one server of the group: its client (made on first use by a
factory, and made again after its connection broke), its tool filter and the
listing calls in flight.  Every call on a member runs on a short-lived named
daemon thread, so the caller waits only until its own deadline, however long
a server takes to start, answer or die.
"""

from __future__ import annotations

import fnmatch
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from . import types
from .exceptions import ClientClosed, ConnectionClosed

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Member", "ToolFilter", "deadline_of", "remaining", "spawn"]

T = TypeVar("T")
_CAMEL = re.compile(r"_([a-z])")


def deadline_of(timeout: float | None) -> float | None:
    """The monotonic deadline of a call that may take *timeout* seconds (``None``: none)."""
    return None if timeout is None else time.monotonic() + timeout


def remaining(deadline: float | None) -> float | None:
    """Seconds left until *deadline* (at least 1 ms, so a late call still times out cleanly)."""
    return None if deadline is None else max(0.001, deadline - time.monotonic())


def spawn(name: str, fn: Callable[[], T]) -> Future[T]:
    """Run *fn* on a new daemon thread named ``mcpsync-<name>``; its future."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            result = fn()
        except BaseException as exc:  # handed to the waiting caller, never lost
            future.set_exception(exc)
        else:
            future.set_result(result)

    threading.Thread(target=run, name=f"mcpsync-{name}", daemon=True).start()
    return future


class ToolFilter:
    """Allow and deny globs (on the bare or the prefixed name) and required annotations.

    A tool is kept when no *allow* is given or one of its globs matches, no
    *deny* glob matches (deny wins), and every key of *annotations* is
    declared with that value (``{"readOnlyHint": True}``; snake_case keys work too).
    """

    def __init__(
        self,
        allow: Iterable[str] | None = None,
        deny: Iterable[str] | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> None:
        for value, what in ((allow, "allow"), (deny, "deny")):
            if isinstance(value, str):
                raise TypeError(f"{what} must be a list of names or globs, not a string")
        self.allow = None if allow is None else tuple(allow)
        self.deny = tuple(deny or ())
        self.annotations = {
            _CAMEL.sub(lambda m: m.group(1).upper(), key): value
            for key, value in (annotations or {}).items()
        }

    def keeps(self, tool: types.Tool, prefixed: str) -> bool:
        """Whether *tool* (listed as *prefixed* by the group) passes this filter."""

        def matches(patterns: Iterable[str]) -> bool:
            return any(
                fnmatch.fnmatchcase(tool.name, p) or fnmatch.fnmatchcase(prefixed, p) for p in patterns
            )

        if self.deny and matches(self.deny):
            return False
        if self.allow is not None and not matches(self.allow):
            return False
        if self.annotations:
            declared = types.to_wire(tool.annotations) if tool.annotations is not None else {}
            return all(declared.get(key) == value for key, value in self.annotations.items())
        return True


class Member:
    """One server of a group: its client, made by *factory* on first use."""

    def __init__(
        self, name: str, client: Client | None, factory: Callable[[], Client] | None, tool_filter: ToolFilter
    ) -> None:
        self.name = name
        self.filter = tool_filter
        self._client = client
        self._factory = factory
        self._lock = threading.Lock()
        self._inflight: dict[str, Future[Any]] = {}
        self._closed = False

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
