"""What :meth:`~mcpsync.Client.request_async` returns: :class:`PendingCall`, a request in flight."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsync.client.options import DEFAULT, ClientOptions, TimeoutArg

if TYPE_CHECKING:  # pragma: no cover
    from mcpsync.rpc.session import PendingRequest, Session

__all__ = ["PendingCall"]


class PendingCall:
    """A request in flight, from :meth:`Client.request_async`.

    :meth:`result` blocks for the reply; :meth:`cancel` (from any thread) makes the
    waiter raise :class:`~mcpsync.RequestCancelled` and tells the server.
    """

    def __init__(self, session: Session, pending: PendingRequest, options: ClientOptions) -> None:
        self._session = session
        self._pending = pending
        self._options = options

    @property
    def id(self) -> int:
        """The JSON-RPC id of the request."""
        return self._pending.id

    def done(self) -> bool:
        """Whether the request has settled (reply, error, timeout or cancel)."""
        return self._pending.reply.done()

    def result(self, timeout: TimeoutArg = DEFAULT, *, reset_timeout_on_progress: bool = True,
               max_total_timeout: float | None = None) -> dict[str, Any]:
        """Wait for the raw result (*timeout* counts from now; the client's default by default).

        :raises RequestTimeout: when no reply (or progress) came in time; the server is
            sent ``notifications/cancelled``.
        :raises ServerError: for a JSON-RPC error reply.
        :raises ConnectionClosed: when the connection died first.
        """
        deadline = self._options.deadline(timeout, max_total_timeout, reset_timeout_on_progress)
        return self._session.wait(self._pending, deadline)

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the request; ``False`` if it had already settled."""
        return self._session.cancel(self._pending, reason)
