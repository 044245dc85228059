"""One lazily made client per process, for web apps (Flask, Django, gunicorn, uWSGI).

::

    from mcpsync.shared import SharedClient

    mcp = SharedClient(lambda: mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"]))

    def view(request):
        return mcp.call_tool("add", {"a": 1, "b": 2}).text

:class:`SharedClient` makes its :class:`~mcpsync.Client` on first use (so importing
the app in a pre-forking master starts nothing) and shares it between threads.
The client itself reconnects: after its connection broke (the call that saw
:class:`~mcpsync.ConnectionClosed` still raises it, since a tool call is not safe to
repeat blindly; the *next* call gets a fresh connection), and in a forked child.  A
forked child also drops the parent's client object and makes its own from the
factory, so even a client that cannot rebuild its transport is replaced there.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mcpsync import _fork
from mcpsync.exceptions import ClientClosed

if TYPE_CHECKING:
    from mcpsync.client.client import Client

__all__ = ["SharedClient"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class SharedClient:
    """A process-wide :class:`~mcpsync.Client` made by *factory* on first use.

    Attribute access is forwarded to the client (``shared.list_tools()``), so it reads
    like a Client.  :meth:`run` gives a callable the client for several calls.

    :param factory: makes a new, unconnected client, e.g. ``lambda:
        mcpsync.Client.stdio(...)`` or ``lambda: mcpsync.Client.from_config(path, name)``.
    """

    def __init__(self, factory: Callable[[], Client]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._client: Client | None = None
        #: The last client made in this process (its connection count survives close()).
        self._made: Client | None = None
        self._closed = False
        _fork.join(self)

    def after_fork_in_child(self) -> None:
        """In a forked child (:mod:`mcpsync._fork`): a fresh lock, and the parent's client let go of."""
        self._lock = threading.Lock()
        self._client = self._made = None

    @property
    def generation(self) -> int:
        """How many connections the client has opened in this process (for logs and tests)."""
        made = self._made
        return 0 if made is None else made.generation

    def get(self) -> Client:
        """The client, made (not yet connected) on first use."""
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._closed:
                raise ClientClosed("the shared client is closed")
            if self._client is None:
                self._client = self._made = self._factory()
            return self._client

    def run(self, func: Callable[[Client], T]) -> T:
        """``func(client)``."""
        return func(self.get())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.get(), name)

    def close(self) -> None:
        """Close the client; later uses raise :class:`~mcpsync.ClientClosed`."""
        with self._lock:
            self._closed = True
            old, self._client = self._client, None
        if old is not None:
            old.close()

    def __repr__(self) -> str:
        return f"<SharedClient generation={self.generation} connected={self._client is not None}>"
