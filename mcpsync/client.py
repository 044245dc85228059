"""The blocking, typed MCP client users call."""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Callable, Mapping, Sequence, TypeVar

from . import __version__, types
from ._connection import Connection, Listeners
from ._options import DEFAULT, ClientOptions, Default, RootsArg, TimeoutArg
from ._schema import check_structured_content
from .exceptions import (
    CapabilityNotSupported,
    ClientClosed,
    ForkedClientError,
    ProtocolError,
)
from .session import PendingRequest, ProgressCallback
from .transports.base import Transport

__all__ = ["Client", "PendingCall", "Handle"]

log = logging.getLogger(__name__)

T = TypeVar("T")
_MAX_PAGES = 10_000


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

    def __init__(self, client: Client, conn: Connection, pending: PendingRequest) -> None:
        self._client = client
        self._conn = conn
        self._pending = pending

    @property
    def id(self) -> int:
        """The JSON-RPC id of the request."""
        return self._pending.id

    def done(self) -> bool:
        """Whether the request has settled (reply, error, timeout or cancel)."""
        return self._pending.future.done()

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
            timeout=self._client._timeout(timeout),
            reset_on_progress=reset_timeout_on_progress,
            max_total=max_total_timeout,
        )

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the request; ``False`` if it had already settled."""
        return self._conn.session.cancel(self._pending, reason)


class Client:
    """A synchronous MCP client.

    A Client can be shared between threads; create it once per process.  The
    connection opens on first use (or :meth:`connect`); :meth:`close` is
    idempotent and bounded in time::

        with mcpsync.Client.stdio(["python", "-m", "mcpsync.demo"]) as client:
            for tool in client.list_tools():
                print(tool.name)
            print(client.call_tool("add", {"a": 1, "b": 2}).text)

    :param transport: any :class:`~mcpsync.transports.base.Transport`.
    :param client_info: ``(name, version)`` sent to the server.
    :param timeout: default per-request timeout in seconds; ``None`` waits forever.
    :param mode: ``"auto"``, ``"legacy"`` or a protocol version to pin.
    :param roots: roots to offer the server: :class:`~mcpsync.types.Root`,
        ``(uri, name)`` tuples or paths, or a callable returning them.
    :param sampling_handler: answers ``sampling/createMessage``.
    :param elicitation_handler: answers ``elicitation/create`` (form and URL mode).
    :param logging_handler: receives server log messages.
    :param exception_handler: receives exceptions raised by your callbacks.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        client_info: tuple[str, str] = ("mcpsync", __version__),
        timeout: float | None = 30.0,
        mode: str = "auto",
        roots: RootsArg = None,
        sampling_handler: Callable[[types.CreateMessageRequestParams], types.CreateMessageResult]
        | None = None,
        elicitation_handler: Callable[[Any], types.ElicitResult] | None = None,
        logging_handler: Callable[[types.LoggingMessageNotificationParams], Any] | None = None,
        exception_handler: Callable[[BaseException], None] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        max_queued_notifications: int = 10_000,
        _transport_factory: Callable[[], Transport] | None = None,
    ) -> None:
        self._options = ClientOptions(
            client_info=client_info,
            timeout=timeout,
            mode=mode,
            roots=roots,
            sampling_handler=sampling_handler,
            elicitation_handler=elicitation_handler,
            logging_handler=logging_handler,
            exception_handler=exception_handler,
            capabilities=dict(capabilities) if capabilities else None,
            max_queued_notifications=max_queued_notifications,
        )
        self._options.offered_versions()  # validate mode now, not at first use
        self._transport: Transport | None = transport
        self._factory = _transport_factory
        self._listeners = Listeners()
        self._connect_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._conn: Connection | None = None
        self._connecting: Connection | None = None
        self._closed = False
        self._tools: dict[str, types.Tool] = {}

    @classmethod
    def stdio(
        cls,
        command: str | Sequence[str],
        *,
        args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: Any = None,
        max_message_bytes: int = 32 * 1024 * 1024,
        **options: Any,
    ) -> Client:
        """A client for a server run as a subprocess speaking MCP over stdio.

        :param command: the program, or a list of program and arguments.
        :param env: merged over a safe default environment (not the whole of ours).
        :param stderr: where the server's stderr goes (default: the
            ``mcpsync.server`` logger); it is always drained.
        """
        from .transports.stdio import StdioTransport

        def factory() -> Transport:
            return StdioTransport(
                command,
                args,
                env=env,
                cwd=cwd,
                stderr=stderr,
                max_message_bytes=max_message_bytes,
            )

        return cls(factory(), _transport_factory=factory, **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        auth: Any = None,
        headers: Mapping[str, str] | None = None,
        session: Any = None,
        transport: str = "auto",
        **options: Any,
    ) -> Client:
        """A client for a server reached over HTTP.

        :param transport: ``"auto"`` (Streamable HTTP, falling back to legacy
            HTTP+SSE on the spec's signals), ``"streamable-http"`` or ``"sse"``.
        :param session: a ``requests.Session`` (proxies, TLS, retries); by
            default each connection makes its own.
        :param auth: a ``requests`` auth object, e.g. :class:`mcpsync.auth.OAuth`.

        Options the transports take (``read_timeout``, ``connect_timeout``,
        ``session_retry``, ...; see ``docs/transports.rst``) are split off from
        the client options.
        """
        from .transports.http import http_transport_factory

        factory, options = http_transport_factory(
            url, auth=auth, headers=headers, session=session, transport=transport, options=options
        )
        return cls(factory(), _transport_factory=factory, **options)

    @classmethod
    def websocket(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        **options: Any,
    ) -> Client:
        """A client for a server reached over a WebSocket (``ws://`` or ``wss://``).

        Needs ``pip install 'mcpsync[websocket]'``.  Transport options
        (``verify``, ``subprotocols``, ``connect_timeout``, ``write_timeout``,
        ``max_message_bytes``, ...; see
        :class:`~mcpsync.transports.websocket.WebSocketTransport`) are split off
        from the client options.  A forked child opens its own connection.

        :param headers: extra headers for the upgrade request.
        :param auth: a ``requests`` auth object, e.g. ``mcpsync.auth.BearerToken``;
            the headers it sets go on the upgrade request, on every connect.
        """
        from .transports.websocket import websocket_transport_factory

        factory, options = websocket_transport_factory(
            url, headers=headers, auth=auth, options=options
        )
        return cls(factory(), _transport_factory=factory, **options)

    # -- lifecycle -----------------------------------------------------------

    def connect(self) -> Client:
        """Open the connection now (otherwise it opens on first use)."""
        self._connection()
        return self

    def _connection(self) -> Connection:
        conn = self._conn
        if conn is not None and conn.pid == os.getpid():
            return conn
        # One thread connects; the others wait here.  close() never takes this
        # lock, so it can interrupt a slow handshake from any thread.
        with self._connect_lock:
            with self._state_lock:
                if self._closed:
                    raise ClientClosed("client is closed")
                conn = self._conn
                if conn is not None and conn.pid == os.getpid():
                    return conn
                transport = self._next_transport(conn)
                conn = Connection(transport, self._options, self._listeners)
                self._connecting = conn
            try:
                conn.open(self._options.timeout)
            finally:
                with self._state_lock:
                    self._connecting = None
            with self._state_lock:
                if self._closed:
                    conn.close()
                    raise ClientClosed("client was closed while connecting")
                self._conn = conn
            return conn

    def _next_transport(self, old: Connection | None) -> Transport:
        if old is not None:
            # Forked: the parent's pipes, sockets and threads are not ours.
            old.abandon()
            self._conn = None
            if self._factory is None:
                raise ForkedClientError(
                    "this client was connected before os.fork(); create a new Client in"
                    " the child process (or construct it with Client.stdio/Client.http,"
                    " which reconnect by themselves)"
                )
            self._transport = None
        transport = self._transport
        self._transport = None
        if transport is None:
            if self._factory is None:
                raise ClientClosed("client has no transport")
            transport = self._factory()
        return transport

    def close(self) -> None:
        """Close the connection; idempotent, callable from any thread, bounded in time."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
            conns = [c for c in (self._conn, self._connecting) if c is not None]
            self._conn = None
            transport, self._transport = self._transport, None
        for conn in conns:
            if conn.pid == os.getpid():
                conn.close()
        if transport is not None:
            transport.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> Client:
        return self.connect()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- handshake results ---------------------------------------------------

    def _initialized(self) -> types.InitializeResult:
        result = self._connection().initialize_result
        assert result is not None  # open() sets it before the connection is published
        return result

    @property
    def server_info(self) -> types.Implementation:
        """The server's name, version and title (connects if needed)."""
        return self._initialized().server_info

    @property
    def server_capabilities(self) -> types.ServerCapabilities:
        """What the server declared it supports (connects if needed)."""
        return self._initialized().capabilities

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol revision, e.g. ``"2025-11-25"``."""
        return self._initialized().protocol_version

    @property
    def instructions(self) -> str | None:
        """The server's usage instructions, if it sent any."""
        return self._initialized().instructions

    # -- raw requests --------------------------------------------------------

    def _timeout(self, timeout: TimeoutArg) -> float | None:
        return self._options.timeout if isinstance(timeout, Default) else timeout

    def request_async(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> PendingCall:
        """Send a request and return at once; see :class:`PendingCall`."""
        conn = self._connection()
        pending = conn.session.send_request(method, params, on_progress=progress)
        return PendingCall(self, conn, pending)

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: TimeoutArg = DEFAULT,
        progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = True,
        max_total_timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send any request and return the raw ``result`` object (the escape hatch)."""
        return self.request_async(method, params, progress=progress).result(
            timeout,
            reset_timeout_on_progress=reset_timeout_on_progress,
            max_total_timeout=max_total_timeout,
        )

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send any notification."""
        self._connection().session.notify(method, params)

    def _require(self, capability: str, method: str) -> None:
        caps = self.server_capabilities
        head, _, sub = capability.partition(".")
        value = getattr(caps, head, None)
        if value is not None and sub:
            value = getattr(value, sub, None) if not isinstance(value, dict) else value.get(sub)
        if value is None or value is False:
            raise CapabilityNotSupported(capability, method)

    def _typed(
        self,
        cls: type[T],
        method: str,
        params: Mapping[str, Any] | None,
        timeout: TimeoutArg,
        capability: str | None = None,
    ) -> T:
        if capability is not None:
            self._require(capability, method)
        return types.from_wire(cls, self.request(method, params, timeout=timeout))

    def _paginate(
        self, method: str, key: str, cls: type[Any], capability: str, timeout: TimeoutArg
    ) -> list[Any]:
        self._require(capability, method)
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(_MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            page = types.from_wire(cls, self.request(method, params, timeout=timeout))
            items.extend(getattr(page, key))
            cursor = page.next_cursor
            if cursor is None:
                return items
            if cursor in seen:
                raise ProtocolError(f"{method}: server repeated pagination cursor {cursor[:80]!r}")
            seen.add(cursor)
        raise ProtocolError(f"{method}: more than {_MAX_PAGES} pages")

    # -- tools ---------------------------------------------------------------

    def list_tools(self, *, timeout: TimeoutArg = DEFAULT) -> list[types.Tool]:
        """All tools the server offers (every page)."""
        tools: list[types.Tool] = self._paginate(
            "tools/list", "tools", types.ListToolsResult, "tools", timeout
        )
        self._tools = {tool.name: tool for tool in tools}
        return tools

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: TimeoutArg = DEFAULT,
        progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = True,
        max_total_timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> types.CallToolResult:
        """Call a tool and return its result.

        A result with ``is_error`` is returned, not raised: call
        ``result.raise_for_error()`` to raise :class:`~mcpsync.ToolError`.
        When the tool was listed with an ``outputSchema`` and :mod:`jsonschema`
        is installed, ``structured_content`` is validated against it.

        :param progress: ``fn(progress, total, message)``, run on the dispatcher thread.
        :param reset_timeout_on_progress: progress restarts the *timeout* window.
        :param max_total_timeout: a hard cap, progress or not.
        """
        self._require("tools", "tools/call")
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if meta:
            params["_meta"] = dict(meta)
        raw = self.request(
            "tools/call",
            params,
            timeout=timeout,
            progress=progress,
            reset_timeout_on_progress=reset_timeout_on_progress,
            max_total_timeout=max_total_timeout,
        )
        result = types.from_wire(types.CallToolResult, raw)
        tool = self._tools.get(name)
        if tool is not None and tool.output_schema is not None and not result.is_error:
            check_structured_content(name, tool.output_schema, result.structured_content)
        return result

    # -- resources -----------------------------------------------------------

    def list_resources(self, *, timeout: TimeoutArg = DEFAULT) -> list[types.Resource]:
        """All resources the server lists (every page)."""
        return self._paginate(
            "resources/list", "resources", types.ListResourcesResult, "resources", timeout
        )

    def list_resource_templates(
        self, *, timeout: TimeoutArg = DEFAULT
    ) -> list[types.ResourceTemplate]:
        """All resource templates (every page)."""
        return self._paginate(
            "resources/templates/list",
            "resource_templates",
            types.ListResourceTemplatesResult,
            "resources",
            timeout,
        )

    def read_resource(self, uri: str, *, timeout: TimeoutArg = DEFAULT) -> types.ReadResourceResult:
        """Read a resource; ``.contents`` holds text and blob contents."""
        return self._typed(
            types.ReadResourceResult, "resources/read", {"uri": uri}, timeout, "resources"
        )

    def subscribe_resource(self, uri: str, *, timeout: TimeoutArg = DEFAULT) -> None:
        """Ask for ``notifications/resources/updated`` about *uri* (see :meth:`on`)."""
        self._require("resources.subscribe", "resources/subscribe")
        self.request("resources/subscribe", {"uri": uri}, timeout=timeout)

    def unsubscribe_resource(self, uri: str, *, timeout: TimeoutArg = DEFAULT) -> None:
        """Stop updates about *uri*."""
        self._require("resources.subscribe", "resources/unsubscribe")
        self.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    # -- prompts -------------------------------------------------------------

    def list_prompts(self, *, timeout: TimeoutArg = DEFAULT) -> list[types.Prompt]:
        """All prompts (every page)."""
        return self._paginate("prompts/list", "prompts", types.ListPromptsResult, "prompts", timeout)

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: TimeoutArg = DEFAULT,
    ) -> types.GetPromptResult:
        """Render a prompt; ``.messages`` holds the conversation."""
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = {key: str(value) for key, value in arguments.items()}
        return self._typed(types.GetPromptResult, "prompts/get", params, timeout, "prompts")

    # -- the rest ------------------------------------------------------------

    def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument_name: str,
        argument_value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: TimeoutArg = DEFAULT,
    ) -> types.Completion:
        """Ask the server to complete an argument of a prompt or resource template."""
        params: dict[str, Any] = {
            "ref": types.to_wire(ref),
            "argument": {"name": argument_name, "value": argument_value},
        }
        if context:
            params["context"] = {"arguments": dict(context)}
        result = self._typed(
            types.CompleteResult, "completion/complete", params, timeout, "completions"
        )
        return result.completion

    def set_logging_level(self, level: str, *, timeout: TimeoutArg = DEFAULT) -> None:
        """Ask the server to send log messages at *level* and above."""
        self._require("logging", "logging/setLevel")
        self.request("logging/setLevel", {"level": level}, timeout=timeout)

    def ping(self, *, timeout: TimeoutArg = DEFAULT) -> None:
        """Check that the server answers."""
        self.request("ping", None, timeout=timeout)

    def notify_roots_changed(self) -> None:
        """Tell the server the roots changed (it will ask for them again)."""
        self.notify("notifications/roots/list_changed")

    def on(self, method: str, callback: Callable[[dict[str, Any]], Any]) -> Handle:
        """Call ``callback(params)`` for each notification *method* (``"*"``: all).

        Callbacks run on the dispatcher thread, never the reader thread, in
        arrival order; they may call the client.
        """
        self._listeners.add(method, callback)
        return Handle(self._listeners, method, callback)
