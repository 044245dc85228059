"""What you need to test your own MCP client code: an in-process fake server.

:class:`FakeServer` is a real (small, synchronous) MCP server.  Declare
tools, resources and prompts with decorators, then talk to it in-process
with :meth:`FakeServer.client` (no subprocess, no sockets) or serve it on
stdio with :meth:`FakeServer.run_stdio` (for ``python -m yourmodule``)::

    from mcpsync.testing import FakeServer

    server = FakeServer("demo")

    @server.tool()
    def add(a: int, b: int) -> int:
        "Add two integers."
        return a + b

    with server.client() as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"

A tool's input schema comes from its type hints; a parameter annotated
``ctx: ToolContext`` gives it progress, logging, cancellation and
server→client requests (sampling, elicitation, roots).  A tool that raises
(:class:`ToolFailure` or anything else) returns ``isError: true``; raise
:class:`RpcError` to answer with a JSON-RPC error instead.

May import: the client (to hand back a connected :class:`~mcpsync.Client`), the memory
transport, its own server engine (:mod:`mcpsync.testing.server`), rpc, types, exceptions.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from mcpsync.testing.server import convert
from mcpsync.testing.server.connection import Send, ServerConnection
from mcpsync.testing.server.context import ToolContext
from mcpsync.testing.server.errors import ClientRequestError, RpcError
from mcpsync.testing.server.methods import dispatch
from mcpsync.testing.server.registry import KEYS, Feature, Registry, ToolFailure
from mcpsync.testing.server.stdio import serve_stdio
from mcpsync.testing.server.tasks import TASK_MODES
from mcpsync.transports.base import CloseHandler, MessageHandler, Transport
from mcpsync.transports.memory import MemoryTransport, create_pair

if TYPE_CHECKING:
    from mcpsync.client.client import Client
    from mcpsync.testing.token_store import TokenStoreContract

__all__ = ["ClientRequestError", "FakeServer", "MemoryTransport", "RpcError", "TokenStoreContract", "ToolContext",
           "ToolFailure", "create_pair"]


def __getattr__(name: str) -> Any:
    # Lazy: the token store contract pulls in mcpsync.auth (and, when used, keyring);
    # ``import mcpsync.testing`` for a FakeServer must not pay for that.
    if name == "TokenStoreContract":
        from mcpsync.testing.token_store import TokenStoreContract

        return TokenStoreContract
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


F = TypeVar("F", bound=Callable[..., Any])


def _wire(fn: Callable[..., Any], description: str | None, **fields: Any) -> dict[str, Any]:
    """A feature's wire description: *fields* less the empty ones; the description defaults to
    the first paragraph of *fn*'s docstring."""
    doc = inspect.getdoc(fn)
    fields["description"] = description or (doc.split("\n\n")[0].strip() if doc else None)
    return {k: dict(v) if isinstance(v, Mapping) else v for k, v in fields.items() if v not in (None, "")}


class FakeServer(Registry):
    """An in-process MCP server for tests, demos and ``python -m`` servers.

    :param name: ``serverInfo.name``.
    :param version: ``serverInfo.version``.
    :param instructions: the ``instructions`` sent in ``initialize``.
    :param page_size: items per page of list results (``None``: no pagination),
        to test a client's pagination.
    :param capabilities: the capabilities to declare, verbatim; by default tools,
        resources (with subscribe), prompts, logging and completions, all with
        ``listChanged``.
    :param era: which protocol era to speak.  ``"dual"`` (the default) serves
        both, as the official SDK's servers do: a request with a 2026-07-28
        ``_meta`` (``server/discover``, the probe of ``mode="auto"``) is
        answered statelessly, ``initialize`` starts a handshake-era session.
        ``"modern"`` serves only 2026-07-28 (``initialize`` is -32601), and
        ``"legacy"`` only the handshake era (``server/discover`` is -32601).
        In 2026-07-28, ``ctx.sample()``, ``ctx.elicit()`` and
        ``ctx.list_roots()`` become Multi Round-Trip Requests: the tool's
        first run ends with ``input_required``, and the client's retry runs
        the tool function again from the start with the answers (so a tool
        should ask its questions before doing anything it must not repeat).
    :param cache_ttl_ms: the ``ttlMs`` cache hint of 2026-07-28 list and read results.

    Thread-safe: decorators may be applied while clients are connected (call
    :meth:`notify_tools_changed` and friends afterwards), and any number of
    clients may be connected at once.
    """

    # -- declaring features ------------------------------------------------

    @overload
    def tool(self, name: F) -> F: ...
    @overload
    def tool(self, name: str | None = None, description: str | None = None,
             output_schema: Mapping[str, Any] | None = None, *, title: str | None = None,
             annotations: Mapping[str, Any] | None = None, task: str | None = None) -> Callable[[F], F]: ...

    def tool(self, name: Any = None, description: str | None = None, output_schema: Mapping[str, Any] | None = None,
             *, title: str | None = None, annotations: Mapping[str, Any] | None = None, task: str | None = None) -> Any:
        """Register a tool (decorator); usable bare (``@server.tool``) or called.

        :param name: the tool name (default: the function's name).
        :param description: default: the first paragraph of the docstring.
        :param output_schema: declares ``outputSchema``; the return value then
            becomes ``structuredContent`` (non-dicts wrapped as ``{"result": value}``).
        :param task: ``"optional"`` or ``"required"``: on 2026-07-28, a call that
            declares the tasks extension runs as a task (``required``: only so;
            without the extension it is -32021).  See ``docs/tasks.rst``.
        """
        if callable(name):
            return self.tool()(name)
        if task not in TASK_MODES:
            raise ValueError(f"task must be None, 'optional' or 'required'; got {task!r}")

        def register(fn: F) -> F:
            schema, ctx_param = convert.signature_schema(fn)
            wire = _wire(fn, description, name=name or fn.__name__, inputSchema=schema, title=title,
                         outputSchema=output_schema, annotations=annotations or None)
            self._add("tools", Feature(fn, wire, ctx_param, task))
            return fn

        return register

    def remove_tool(self, name: str) -> None:
        """Forget a tool (then call :meth:`notify_tools_changed` to tell clients)."""
        with self._lock:
            del self._features["tools"][name]

    def resource(self, uri: str, name: str | None = None, mime_type: str | None = "text/plain", *,
                 description: str | None = None) -> Callable[[F], F]:
        """Register a resource (decorator); the function takes no arguments.

        It returns ``str`` (text), ``bytes`` (blob), a contents dict, or a list of them.
        """
        return self._resource("resources", uri, name, mime_type, description)

    def resource_template(self, uri_template: str, name: str | None = None, mime_type: str | None = "text/plain", *,
                          description: str | None = None) -> Callable[[F], F]:
        """Register a resource template (decorator), e.g. ``"demo://greeting/{name}"``.

        The function receives the template's variables as keyword arguments.
        """
        return self._resource("resourceTemplates", uri_template, name, mime_type, description)

    def _resource(self, kind: str, uri: str, name: str | None, mime_type: str | None, description: str | None
                  ) -> Callable[[F], F]:
        def register(fn: F) -> F:
            wire = _wire(fn, description, **{KEYS[kind]: uri}, name=name or fn.__name__, mimeType=mime_type)
            template = convert.UriTemplate(uri) if kind == "resourceTemplates" else None
            self._add(kind, Feature(fn, wire, template=template))
            return fn

        return register

    def prompt(self, name: str | None = None, description: str | None = None) -> Callable[[F], F]:
        """Register a prompt (decorator); its parameters are the prompt's arguments.

        It returns a ``str`` (one user message) or a list of messages (see
        :func:`mcpsync.testing.server.convert.prompt_messages`).
        """

        def register(fn: F) -> F:
            arguments = [{"name": p.name, "required": p.default is p.empty} for p in
                         inspect.signature(fn).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            self._add("prompts", Feature(fn, _wire(fn, description, name=name or fn.__name__, arguments=arguments)))
            return fn

        return register

    def completion(self, handler: F) -> F:
        """Set the ``completion/complete`` handler (usable as a decorator).

        ``handler(ref, argument, context)`` gets the wire dicts (``ref`` has
        ``type`` and ``name`` or ``uri``; ``argument`` has ``name`` and ``value``;
        ``context`` is ``{"arguments": {...}}`` or ``None``) and returns a list of
        strings or a full ``completion`` dict.
        """
        self._completion = handler
        return handler

    # -- talking to connected clients ----------------------------------------

    @property
    def connections(self) -> list[ServerConnection]:
        """The live connections (one per connected client)."""
        with self._lock:
            return list(self._connections)

    def _broadcast(self, method: str, **params: Any) -> None:
        # A 2026-07-28 client hears of changes only on the listen streams it opened.
        for conn in self.connections:
            conn.publish(method, params)

    def notify_tools_changed(self) -> None:
        """Send ``notifications/tools/list_changed`` to every connected client."""
        self._broadcast("notifications/tools/list_changed")

    def notify_resources_changed(self) -> None:
        """Send ``notifications/resources/list_changed`` to every connected client."""
        self._broadcast("notifications/resources/list_changed")

    def notify_prompts_changed(self) -> None:
        """Send ``notifications/prompts/list_changed`` to every connected client."""
        self._broadcast("notifications/prompts/list_changed")

    def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` to the clients subscribed to *uri*."""
        self._broadcast("notifications/resources/updated", uri=uri)

    def end_subscriptions(self) -> None:
        """End every open ``subscriptions/listen`` stream gracefully (2026-07-28)."""
        for conn in self.connections:
            conn.end_listens()

    def cancel_tasks(self, timeout: float = 5.0) -> None:
        """Cancel every task (``task=`` tools) and wait up to *timeout* s for their threads.

        Tasks outlive the connection that started them (any client may follow
        one); call this at the end of a test whose tasks may still be running
        or waiting for input.  A tool notices through ``ctx.cancelled``.
        """
        self.tasks.join(timeout)

    def disconnect_all(self) -> None:
        """Drop every in-process connection, as a crashing server would.

        Pending and later calls of those clients fail with
        :class:`~mcpsync.exceptions.ConnectionClosed`.
        """
        for conn in self.connections:
            conn.disconnect()

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` to every client whose level lets it through."""
        for conn in self.connections:
            conn.log(level, data, logger)

    # -- running ---------------------------------------------------------------

    def _connect(self, send: Send, disconnect: Callable[[], None] | None = None) -> ServerConnection:
        conn = ServerConnection(send, functools.partial(dispatch, self), disconnect, self._lost)
        with self._lock:
            self._connections.add(conn)
        return conn

    def _lost(self, conn: ServerConnection) -> None:
        with self._lock:
            self._connections.discard(conn)

    def transport(self) -> Transport:
        """A fresh client-side transport connected to this server in-process.

        The server side starts serving (on the memory transport's daemon
        thread) when the client starts the transport, and stops when it closes.
        """
        return _ServedTransport(self)

    def client(self, **options: Any) -> Client:
        """A :class:`mcpsync.Client` connected to this server in-process (lazily).

        :param options: passed to :class:`mcpsync.Client` (``timeout=``,
            ``sampling_handler=``, ``roots=`` …).
        """
        from mcpsync.client.client import Client

        return Client(self.transport(), **options)

    def run_stdio(self) -> None:
        """Serve one client on this process's stdin/stdout until EOF.

        While serving, ``sys.stdout`` points at stderr so a stray ``print()``
        cannot corrupt the protocol stream.
        """
        stdout = sys.stdout.buffer
        with contextlib.redirect_stdout(sys.stderr):
            serve_stdio(self._connect, sys.stdin.buffer, stdout)

    def __repr__(self) -> str:
        return f"FakeServer({self.name!r}, {self.version!r})"


class _ServedTransport(Transport):
    """The client end of a memory pair whose server end serves a :class:`FakeServer` once started."""

    def __init__(self, server: FakeServer) -> None:
        self._server = server
        self._client_end, self._server_end = create_pair()

    def start(self, on_message: MessageHandler, on_close: CloseHandler, *args: Any, **kwargs: Any) -> None:
        conn = self._server._connect(self._server_end.send, self._server_end.close)
        self._server_end.start(conn.feed, conn.connection_lost)
        self._client_end.start(on_message, on_close)

    def send(self, message: Mapping[str, Any], *args: Any, **kwargs: Any) -> None:
        self._client_end.send(message, *args, **kwargs)

    def close(self) -> None:
        self._client_end.close()

    def describe(self) -> str:
        return f"in-process FakeServer {self._server.name!r}"
