"""One lazily connected client per process, for web apps (Flask, Django, gunicorn, uWSGI).

::

    from mcpsync.shared import SharedClient

    mcp = SharedClient(lambda: mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"]))

    def view(request):
        return mcp.call_tool("add", {"a": 1, "b": 2}).text

:class:`SharedClient` creates its :class:`~mcpsync.Client` on first use (so
importing the app in a pre-forking master starts nothing), shares it between
threads, and replaces it:

* after the connection broke (the server crashed or was restarted): the call
  that saw :class:`~mcpsync.ConnectionClosed` still raises it, since a tool
  call is not safe to repeat blindly, and the *next* call gets a fresh client;
* in a forked child: the child makes its own client from the factory and
  never touches the parent's (whose pipes and sockets it merely inherited).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mcpsync.exceptions import ClientClosed, ConnectionClosed, ForkedClientError

if TYPE_CHECKING:
    from mcpsync.client.client import Client

__all__ = ["SharedClient"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class SharedClient:
    """A process-wide :class:`~mcpsync.Client` made by *factory* on first use.

    Attribute access is forwarded to the current client (``shared.list_tools()``),
    so it reads like a Client.  :meth:`run` gives a callable the client for
    several calls on the same connection.

    :param factory: makes a new, unconnected client, e.g.
        ``lambda: mcpsync.Client.stdio(...)`` or ``lambda: mcpsync.Client.from_config(path, name)``.
    """

    def __init__(self, factory: Callable[[], Client]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._client: Client | None = None
        self._closed = False
        #: How many clients this object has made in this process (for logs and tests).
        self.generation = 0

    def _check_fork(self) -> None:
        if self._pid != os.getpid():
            # A forked child: the lock may have been held by a parent thread that does not
            # exist here, and the client belongs to the parent. Start over, touching nothing.
            self._lock = threading.Lock()
            self._client = None
            self._pid = os.getpid()
            self.generation = 0

    def get(self) -> Client:
        """The current client, made (not yet connected) on first use."""
        self._check_fork()
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._closed:
                raise ClientClosed("the shared client is closed")
            if self._client is None:
                self._client = self._factory()
                self.generation += 1
                if self.generation > 1:
                    log.info("made a new shared client (generation %d)", self.generation)
            return self._client

    def discard(self, client: Client | None = None) -> None:
        """Close and forget the current client (or *client*, if it is still current).

        The next use makes a new one.  Called for you after a broken connection.
        """
        with self._lock:
            if client is not None and self._client is not client:
                return  # another thread already replaced it
            old, self._client = self._client, None
        if old is not None:
            old.close()

    def run(self, func: Callable[[Client], T]) -> T:
        """``func(client)``; a broken connection discards the client before re-raising."""
        client = self.get()
        try:
            return func(client)
        except ConnectionClosed as exc:
            if not isinstance(exc, ClientClosed) or not self._closed:
                self.discard(client)
            raise
        except ForkedClientError:
            self.discard(client)
            raise

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self.get(), name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.run(lambda client: getattr(client, name)(*args, **kwargs))

        call.__name__ = name
        return call

    def close(self) -> None:
        """Close the client; later uses raise :class:`~mcpsync.ClientClosed`."""
        self._check_fork()
        with self._lock:
            self._closed = True
            old, self._client = self._client, None
        if old is not None:
            old.close()

    def __repr__(self) -> str:
        return f"<SharedClient generation={self.generation} connected={self._client is not None}>"
