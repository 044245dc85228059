"""The pieces of the server engine that tool code sees: errors and :class:`ToolContext`.

Split from :mod:`mcpsync.testing.server.connection` (the connection engine) so each stays small;
:mod:`mcpsync.testing` re-exports the public names.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from mcpsync.types.protocol import HANDSHAKE_VERSIONS, wire_name
from mcpsync.types.protocol import LOGGING_LEVELS as _LEVELS

from mcpsync.testing.server.call import ModernCall
from mcpsync.testing.server.errors import ClientRequestError, RpcError

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "LOGGING_LEVELS",
    "PROTOCOL_VERSIONS",
    "ClientRequestError",
    "ListenStreams",
    "Peer",
    "RpcError",
    "ServerApp",
    "ToolContext",
]

#: Protocol revisions this engine negotiates, newest first.
PROTOCOL_VERSIONS = HANDSHAKE_VERSIONS
#: The revision offered when the client asks for one we do not speak.
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[0]
#: RFC 5424 severities, least severe first, as MCP names them.
LOGGING_LEVELS: tuple[str, ...] = _LEVELS


class ServerApp(Protocol):
    """What the engine needs from the server's features (plain wire dicts).

    Methods raise :class:`RpcError` for protocol errors (unknown tool, bad
    arguments, unknown resource); any other exception becomes -32603.
    """

    def server_info(self) -> dict[str, Any]: ...
    def server_capabilities(self, protocol_version: str) -> dict[str, Any]: ...
    def server_instructions(self) -> str | None: ...
    def list_tools(self) -> list[dict[str, Any]]: ...
    def call_tool(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext
    ) -> dict[str, Any]: ...
    def list_resources(self) -> list[dict[str, Any]]: ...
    def list_resource_templates(self) -> list[dict[str, Any]]: ...
    def read_resource(self, uri: str) -> dict[str, Any]: ...
    def list_prompts(self) -> list[dict[str, Any]]: ...
    def get_prompt(self, name: str, arguments: dict[str, str]) -> dict[str, Any]: ...
    def complete(
        self, ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None
    ) -> dict[str, Any]: ...
    def connection_opened(self, conn: Peer) -> None: ...
    def connection_closed(self, conn: Peer) -> None: ...


class ListenStreams(Protocol):
    """The open ``subscriptions/listen`` streams of a connection (see :class:`.modern.Listens`)."""

    def open(self, conn: Peer, request_id: Any, params: dict[str, Any]) -> None: ...
    def end_all(self, conn: Peer) -> None: ...


class Peer(Protocol):
    """What the engine's parts (the method table, the stateless era, the tool threads and
    :class:`ToolContext`) use of the connection they serve.

    :class:`~mcpsync.testing.server.connection.ServerConnection` is the one implementation;
    the parts depend on this description instead of on it, so the connection can import them
    all without a cycle.  The underscored members are the engine's own, never the user's.
    """

    app: ServerApp
    page_size: int | None
    log_level: str | None
    protocol_version: str | None
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any]
    era: str | None
    _lock: threading.Lock
    _inflight: dict[Any, ToolContext]
    _cancelled: set[Any]
    _threads: set[threading.Thread]
    _closed: bool

    @property
    def listens(self) -> ListenStreams: ...
    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None: ...
    def publish(self, method: str, params: dict[str, Any]) -> None: ...
    def disconnect(self) -> None: ...
    def log(self, level: str, data: Any, logger: str | None = None) -> None: ...
    def send_log(self, level: str, data: Any, logger: str | None, threshold: str | None) -> None: ...
    def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = 60.0
    ) -> dict[str, Any]: ...
    def set_subscribed(self, uri: str, subscribed: bool) -> None: ...
    def _respond(self, request_id: Any, result: Mapping[str, Any]) -> None: ...
    def _error(self, request_id: Any, error: RpcError) -> None: ...
    def _start_tool(self, request_id: Any, params: dict[str, Any], call: ModernCall | None = None) -> None: ...
    def _answer_inline(
        self,
        request_id: Any,
        method: str,
        params: dict[str, Any],
        finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None: ...


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

    def __init__(
        self,
        conn: Peer,
        request_id: Any,
        meta: Mapping[str, Any],
        modern: ModernCall | None = None,
    ) -> None:
        #: The JSON-RPC id of the ``tools/call`` request.
        self.request_id = request_id
        #: The request's ``_meta`` (may hold ``progressToken``).
        self.meta: dict[str, Any] = dict(meta)
        #: Set when the client sends ``notifications/cancelled`` for this call or disconnects.
        self.cancelled = threading.Event()
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

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the client asked for progress (else do nothing)."""
        token = self.meta.get("progressToken")
        if token is None:
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

    def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = 60.0
    ) -> dict[str, Any]:
        """Send a raw server→client request and block until its result.

        In 2026-07-28 there are no server→client requests: the first time, this
        ends the tool with an ``input_required`` result; on the client's retry
        the tool runs again and this returns the client's answer.
        """
        if self.modern is not None:
            return self.modern.answer(method, dict(params) if params is not None else None)
        return self._conn.request(method, params, timeout=timeout)

    def sample(
        self,
        messages: list[Any] | str,
        *,
        max_tokens: int = 256,
        timeout: float | None = 60.0,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Ask the client's LLM (``sampling/createMessage``); returns the raw result dict.

        :param messages: message dicts, or strings (each becomes a user text message).
        :param kwargs: more params in snake_case (``system_prompt=`` → ``systemPrompt``).
        :raises RuntimeError: if the client did not declare the ``sampling`` capability.
        """
        self._require("sampling")
        if isinstance(messages, str):
            messages = [messages]
        wire = [
            {"role": "user", "content": {"type": "text", "text": m}} if isinstance(m, str) else m
            for m in messages
        ]
        params: dict[str, Any] = {"messages": wire, "maxTokens": max_tokens}
        params.update({wire_name(k): v for k, v in kwargs.items()})
        return self.request("sampling/createMessage", params, timeout=timeout)

    def elicit(
        self, message: str, requested_schema: Mapping[str, Any], *, timeout: float | None = 60.0
    ) -> dict[str, Any]:
        """Ask the user for input (``elicitation/create``, form mode); returns the raw result.

        :raises RuntimeError: if the client did not declare the ``elicitation`` capability.
        """
        self._require("elicitation")
        params = {"message": message, "requestedSchema": dict(requested_schema)}
        return self.request("elicitation/create", params, timeout=timeout)

    def list_roots(self, *, timeout: float | None = 60.0) -> list[dict[str, Any]]:
        """Ask the client for its roots (``roots/list``).

        :raises RuntimeError: if the client did not declare the ``roots`` capability.
        """
        self._require("roots")
        roots = self.request("roots/list", None, timeout=timeout).get("roots")
        return list(roots) if isinstance(roots, list) else []

    def _require(self, capability: str) -> None:
        if capability not in self.client_capabilities:
            raise RuntimeError(f"the client did not declare the {capability!r} capability")
