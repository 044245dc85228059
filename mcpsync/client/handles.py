"""What :class:`~mcpsync.Client` hands back: :class:`PendingCall` and :class:`Handle`.

Both are re-exported by :mod:`mcpsync.client.client` and :mod:`mcpsync`, where users
import them from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpsync.client.options import DEFAULT, Default, TimeoutArg

if TYPE_CHECKING:  # pragma: no cover
    from mcpsync.client.connection import Connection, Listeners
    from mcpsync.rpc.session import PendingRequest

__all__ = ["Handle", "PendingCall"]


class Handle:
    """Returned by :meth:`Client.on`; :meth:`remove` unregisters the callback."""

    def __init__(self, listeners: Listeners, method: str, callback: Callable[[dict[str, Any]], Any]):
        self._listeners = listeners
        self.method = method
        self.callback = callback

    def remove(self) -> None:
        """Stop calling the callback; idempotent."""
        self._listeners.remove(self.method, self.callback)


class PendingCall:
    """A request in flight, from :meth:`Client.request_async`.

    :meth:`result` blocks for the reply; :meth:`cancel` (from any thread) makes
    the waiter raise :class:`~mcpsync.RequestCancelled` and tells the server.
    """

    def __init__(self, conn: Connection, pending: PendingRequest, default_timeout: float | None) -> None:
        self._default_timeout = default_timeout  # the client's, resolved when the call was made
        self._conn = conn
        self._pending = pending

    @property
    def id(self) -> int:
        """The JSON-RPC id of the request."""
        return self._pending.id

    def done(self) -> bool:
        """Whether the request has settled (reply, error, timeout or cancel)."""
        return self._pending.reply.done()

    def result(
        self,
        timeout: TimeoutArg = DEFAULT,
        *,
        reset_timeout_on_progress: bool = True,
        max_total_timeout: float | None = None,
    ) -> dict[str, Any]:
        """Wait for the raw result.

        :raises RequestTimeout: when no reply (or progress) came in time; the
            server is sent ``notifications/cancelled``.
        :raises ServerError: for a JSON-RPC error reply.
        :raises ConnectionClosed: when the connection died first.
        """
        return self._conn.session.wait(
            self._pending,
            timeout=self._default_timeout if isinstance(timeout, Default) else timeout,
            reset_on_progress=reset_timeout_on_progress,
            max_total=max_total_timeout,
        )

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the request; ``False`` if it had already settled."""
        return self._conn.session.cancel(self._pending, reason)
