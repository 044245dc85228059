"""What tool code sees of the server engine: :class:`ToolContext` (re-exported by
:mod:`mcpsync.testing`)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from mcpsync.testing.server.connection import ServerConnection
from mcpsync.testing.server.modern import ModernCall
from mcpsync.types.protocol import wire_name


class ToolContext:
    """Given to a tool that declares a ``ctx: ToolContext`` parameter.

    Lets the tool report progress, log to the client, make server→client
    requests and notice cancellation.  Every method is safe to call from the
    tool's thread while other tools run.

    Example::

        @server.tool()
        def slow(n: int, ctx: ToolContext) -> str:
            for i in range(n):
                if ctx.cancelled.wait(0.1):
                    return "stopped"
                ctx.report_progress(i + 1, n)
            return "done"
    """

    def __init__(self, conn: ServerConnection, request_id: Any, meta: Mapping[str, Any],
                 modern: ModernCall | None = None, cancelled: threading.Event | None = None) -> None:
        #: The JSON-RPC id of the ``tools/call`` request (``None`` in a task).
        self.request_id = request_id
        #: The request's ``_meta`` (may hold ``progressToken``).
        self.meta: dict[str, Any] = dict(meta)
        #: Set when the client cancels this call (or its task) or disconnects.
        self.cancelled = cancelled or threading.Event()
        #: The 2026-07-28 side of this call (``None`` in the handshake era): requests to the
        #: client become ``input_required`` results, and the tool runs again with the answers.
        self.modern = modern
        self._conn = conn

    @property
    def protocol_version(self) -> str | None:
        """The revision negotiated with this client (2026-07-28: the one this request named)."""
        return self.modern.version if self.modern is not None else self._conn.protocol_version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities the client declared (in ``initialize``, or in this request's ``_meta``)."""
        return self.modern.client_capabilities if self.modern is not None else self._conn.client_capabilities

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the client asked for progress (else do nothing)."""
        if (token := self.meta.get("progressToken")) is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and self._conn.protocol_version != "2024-11-05":
            params["message"] = message
        self._conn.notify("notifications/progress", params)

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` unless the client's level filters it out.

        A 2026-07-28 request gets log messages only if it named a level.
        """
        if self.modern is None:
            self._conn.log(level, data, logger)
        elif self.modern.log_level is not None:
            self._conn.send_log(level, data, logger, self.modern.log_level)

    def request(self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = 60.0
                ) -> dict[str, Any]:
        """Send a raw server→client request and block until its result.

        In 2026-07-28 there are no server→client requests: the first time, this
        ends the tool with an ``input_required`` result; on the client's retry
        the tool runs again and this returns the client's answer.
        """
        if self.modern is not None:
            return self.modern.answer(method, dict(params) if params is not None else None)
        return self._conn.request(method, params, timeout=timeout)

    def sample(self, messages: list[Any] | str, *, max_tokens: int = 256, timeout: float | None = 60.0, **kwargs: Any
               ) -> dict[str, Any]:
        """Ask the client's LLM (``sampling/createMessage``); returns the raw result dict.

        :param messages: message dicts, or strings (each becomes a user text message).
        :param kwargs: more params in snake_case (``system_prompt=`` → ``systemPrompt``).
        :raises RuntimeError: if the client did not declare the ``sampling`` capability.
        """
        wire = [{"role": "user", "content": {"type": "text", "text": m}} if isinstance(m, str) else m
                for m in ([messages] if isinstance(messages, str) else messages)]
        params = {"messages": wire, "maxTokens": max_tokens, **{wire_name(k): v for k, v in kwargs.items()}}
        return self._ask("sampling", "sampling/createMessage", params, timeout)

    def elicit(self, message: str, requested_schema: Mapping[str, Any], *, timeout: float | None = 60.0
               ) -> dict[str, Any]:
        """Ask the user for input (``elicitation/create``, form mode); returns the raw result.

        :raises RuntimeError: if the client did not declare the ``elicitation`` capability.
        """
        params = {"message": message, "requestedSchema": dict(requested_schema)}
        return self._ask("elicitation", "elicitation/create", params, timeout)

    def list_roots(self, *, timeout: float | None = 60.0) -> list[dict[str, Any]]:
        """Ask the client for its roots (``roots/list``).

        :raises RuntimeError: if the client did not declare the ``roots`` capability.
        """
        roots = self._ask("roots", "roots/list", None, timeout).get("roots")
        return list(roots) if isinstance(roots, list) else []

    def _ask(self, capability: str, method: str, params: Mapping[str, Any] | None, timeout: float | None
             ) -> dict[str, Any]:
        if capability not in self.client_capabilities:
            raise RuntimeError(f"the client did not declare the {capability!r} capability")
        return self.request(method, params, timeout=timeout)
