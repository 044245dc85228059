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

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import inspect
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar, overload

from . import _server_convert as convert
from ._server import ClientRequestError, RpcError, ServerConnection, ToolContext, serve_stdio
from .transports.base import CloseHandler, MessageHandler, Transport
from .transports.memory import MemoryTransport, create_pair

if TYPE_CHECKING:
    from .client import Client

__all__ = ["FakeServer", "ToolContext", "ToolFailure", "RpcError", "ClientRequestError", "MemoryTransport", "create_pair"]

F = TypeVar("F", bound=Callable[..., Any])

_INVALID_PARAMS = -32602
_RESOURCE_NOT_FOUND = -32002


class ToolFailure(Exception):
    """Raise from a tool to return ``isError: true`` with this message as the text."""


class _Tool:
    def __init__(self, fn: Callable[..., Any], name: str, description: str | None,
                 output_schema: Mapping[str, Any] | None, title: str | None,
                 annotations: Mapping[str, Any] | None) -> None:
        self.fn = fn
        self.input_schema, self.ctx_param = convert.signature_schema(fn)
        self.output_schema = dict(output_schema) if output_schema is not None else None
        self.wire: dict[str, Any] = {"name": name, "inputSchema": self.input_schema}
        if title:
            self.wire["title"] = title
        if description:
            self.wire["description"] = description
        if self.output_schema is not None:
            self.wire["outputSchema"] = self.output_schema
        if annotations:
            self.wire["annotations"] = dict(annotations)


class _Resource:
    def __init__(self, fn: Callable[..., Any], wire: dict[str, Any], mime_type: str | None,
                 template: convert.UriTemplate | None = None) -> None:
        self.fn = fn
        self.wire = wire
        self.mime_type = mime_type
        self.template = template


def _doc(fn: Callable[..., Any]) -> str | None:
    text = inspect.getdoc(fn)
    return text.split("\n\n")[0].strip() or None if text else None


class FakeServer:
    """An in-process MCP server for tests, demos and ``python -m`` servers.

    :param name: ``serverInfo.name``.
    :param version: ``serverInfo.version``.
    :param instructions: the ``instructions`` sent in ``initialize``.
    :param page_size: items per page of list results (``None``: no pagination),
        to test a client's pagination.
    :param capabilities: the capabilities to declare, verbatim; by default tools,
        resources (with subscribe), prompts, logging and completions, all with
        ``listChanged``.

    Thread-safe: decorators may be applied while clients are connected (call
    :meth:`notify_tools_changed` and friends afterwards), and any number of
    clients may be connected at once.
    """

    def __init__(self, name: str, version: str = "0.1.0", *, instructions: str | None = None,
                 page_size: int | None = None, capabilities: Mapping[str, Any] | None = None) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.name = name
        self.version = version
        self.instructions = instructions
        self.page_size = page_size
        self._capabilities = dict(capabilities) if capabilities is not None else None
        self._lock = threading.Lock()
        self._tools: dict[str, _Tool] = {}
        self._resources: dict[str, _Resource] = {}
        self._templates: dict[str, _Resource] = {}
        self._prompts: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {}
        self._completion: Callable[..., Any] | None = None
        self._connections: set[ServerConnection] = set()

    # -- declaring features ------------------------------------------------

    @overload
    def tool(self, name: F) -> F: ...
    @overload
    def tool(self, name: str | None = None, description: str | None = None,
             output_schema: Mapping[str, Any] | None = None, *, title: str | None = None,
             annotations: Mapping[str, Any] | None = None) -> Callable[[F], F]: ...

    def tool(self, name: Any = None, description: str | None = None,
             output_schema: Mapping[str, Any] | None = None, *, title: str | None = None,
             annotations: Mapping[str, Any] | None = None) -> Any:
        """Register a tool (decorator); usable bare (``@server.tool``) or called.

        :param name: the tool name (default: the function's name).
        :param description: default: the first paragraph of the docstring.
        :param output_schema: declares ``outputSchema``; the return value then
            becomes ``structuredContent`` (non-dicts wrapped as ``{"result": value}``).
        """
        if callable(name):
            return self.tool()(name)

        def register(fn: F) -> F:
            tool = _Tool(fn, name or fn.__name__, description or _doc(fn), output_schema, title, annotations)
            with self._lock:
                self._tools[tool.wire["name"]] = tool
            return fn

        return register

    def remove_tool(self, name: str) -> None:
        """Forget a tool (then call :meth:`notify_tools_changed` to tell clients)."""
        with self._lock:
            del self._tools[name]

    def resource(self, uri: str, name: str | None = None, mime_type: str | None = "text/plain", *,
                 description: str | None = None) -> Callable[[F], F]:
        """Register a resource (decorator); the function takes no arguments.

        It returns ``str`` (text), ``bytes`` (blob), a contents dict, or a list of them.
        """
        def register(fn: F) -> F:
            wire = self._resource_wire("uri", uri, name or fn.__name__, mime_type, description or _doc(fn))
            with self._lock:
                self._resources[uri] = _Resource(fn, wire, mime_type)
            return fn

        return register

    def resource_template(self, uri_template: str, name: str | None = None,
                          mime_type: str | None = "text/plain", *,
                          description: str | None = None) -> Callable[[F], F]:
        """Register a resource template (decorator), e.g. ``"demo://greeting/{name}"``.

        The function receives the template's variables as keyword arguments.
        """
        def register(fn: F) -> F:
            wire = self._resource_wire("uriTemplate", uri_template, name or fn.__name__, mime_type,
                                       description or _doc(fn))
            with self._lock:
                self._templates[uri_template] = _Resource(fn, wire, mime_type, convert.UriTemplate(uri_template))
            return fn

        return register

    @staticmethod
    def _resource_wire(key: str, uri: str, name: str, mime_type: str | None,
                       description: str | None) -> dict[str, Any]:
        wire: dict[str, Any] = {key: uri, "name": name}
        if mime_type:
            wire["mimeType"] = mime_type
        if description:
            wire["description"] = description
        return wire

    def prompt(self, name: str | None = None, description: str | None = None) -> Callable[[F], F]:
        """Register a prompt (decorator); its parameters are the prompt's arguments.

        It returns a ``str`` (one user message) or a list of messages (see
        :func:`mcpsync._server_convert.prompt_messages`).
        """
        def register(fn: F) -> F:
            arguments = [{"name": p.name, "required": p.default is p.empty}
                         for p in inspect.signature(fn).parameters.values()
                         if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            wire: dict[str, Any] = {"name": name or fn.__name__, "arguments": arguments}
            text = description or _doc(fn)
            if text:
                wire["description"] = text
            with self._lock:
                self._prompts[wire["name"]] = (fn, wire)
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

    def _broadcast(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        for conn in self.connections:
            conn.notify(method, params)

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
        for conn in self.connections:
            if uri in conn.subscriptions:
                conn.notify("notifications/resources/updated", {"uri": uri})

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` to every client whose level lets it through."""
        for conn in self.connections:
            conn.log(level, data, logger)

    # -- running ---------------------------------------------------------------

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
        from .client import Client

        return Client(self.transport(), **options)

    def run_stdio(self) -> None:
        """Serve one client on this process's stdin/stdout until EOF.

        While serving, ``sys.stdout`` points at stderr so a stray ``print()``
        cannot corrupt the protocol stream.
        """
        stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
        saved, sys.stdout = sys.stdout, sys.stderr
        try:
            serve_stdio(self, stdin, stdout, page_size=self.page_size)
        finally:
            sys.stdout = saved

    # -- the ServerApp protocol (called by the engine) --------------------------

    def server_info(self) -> dict[str, Any]:
        """``serverInfo`` for ``initialize``."""
        return {"name": self.name, "version": self.version}

    def server_capabilities(self, protocol_version: str) -> dict[str, Any]:
        """The capabilities to declare for *protocol_version*."""
        if self._capabilities is not None:
            return dict(self._capabilities)
        caps: dict[str, Any] = {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "logging": {},
        }
        if protocol_version != "2024-11-05":  # completions arrived in 2025-03-26
            caps["completions"] = {}
        return caps

    def server_instructions(self) -> str | None:
        """``instructions`` for ``initialize``."""
        return self.instructions

    def list_tools(self) -> list[dict[str, Any]]:
        """Every tool, as wire dicts."""
        with self._lock:
            return [dict(t.wire) for t in self._tools.values()]

    def call_tool(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        """Run a tool on the calling (per-call) thread and convert its result."""
        with self._lock:
            tool = self._tools.get(name)
        if tool is None:
            raise RpcError(_INVALID_PARAMS, f"Unknown tool: {name}")
        problem = convert.check_arguments(tool.input_schema, arguments)
        if problem is not None:
            return {"content": [{"type": "text", "text": problem}], "isError": True}
        kwargs = dict(arguments)
        if tool.ctx_param is not None:
            kwargs[tool.ctx_param] = ctx
        try:
            value = tool.fn(**kwargs)
        except ClientRequestError as exc:
            return {"content": [{"type": "text", "text": f"request to the client failed: {exc}"}], "isError": True}
        except RpcError:
            raise  # deliberate: the tool asked for a JSON-RPC error response
        except Exception as exc:
            text = str(exc) if isinstance(exc, ToolFailure) else f"{type(exc).__name__}: {exc}"
            return {"content": [{"type": "text", "text": text}], "isError": True}
        return convert.tool_result(value, tool.output_schema)

    def list_resources(self) -> list[dict[str, Any]]:
        """Every resource, as wire dicts."""
        with self._lock:
            return [dict(r.wire) for r in self._resources.values()]

    def list_resource_templates(self) -> list[dict[str, Any]]:
        """Every resource template, as wire dicts."""
        with self._lock:
            return [dict(r.wire) for r in self._templates.values()]

    def read_resource(self, uri: str) -> dict[str, Any]:
        """Read a resource, or the first template that matches *uri*."""
        with self._lock:
            resource = self._resources.get(uri)
            templates = list(self._templates.values())
        if resource is not None:
            value = resource.fn()
        else:
            for candidate in templates:
                assert candidate.template is not None
                variables = candidate.template.match(uri)
                if variables is not None:
                    resource, value = candidate, candidate.fn(**variables)
                    break
        if resource is None:
            raise RpcError(_RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
        return {"contents": convert.resource_contents(uri, value, resource.mime_type)}

    def list_prompts(self) -> list[dict[str, Any]]:
        """Every prompt, as wire dicts."""
        with self._lock:
            return [dict(wire) for _, wire in self._prompts.values()]

    def get_prompt(self, name: str, arguments: dict[str, str]) -> dict[str, Any]:
        """Render a prompt."""
        with self._lock:
            entry = self._prompts.get(name)
        if entry is None:
            raise RpcError(_INVALID_PARAMS, f"Unknown prompt: {name}")
        fn, wire = entry
        known = {a["name"] for a in wire["arguments"]}
        missing = [a["name"] for a in wire["arguments"] if a["required"] and a["name"] not in arguments]
        unknown = sorted(set(arguments) - known)
        if missing or unknown:
            raise RpcError(_INVALID_PARAMS, f"Invalid arguments for prompt {name}: missing {missing}, unknown {unknown}")
        result: dict[str, Any] = {"messages": convert.prompt_messages(fn(**arguments))}
        if "description" in wire:
            result["description"] = wire["description"]
        return result

    def complete(self, ref: dict[str, Any], argument: dict[str, Any],
                 context: dict[str, Any] | None) -> dict[str, Any]:
        """Answer ``completion/complete`` with the registered handler (no handler: no values)."""
        handler = self._completion
        values: Any = handler(ref, argument, context) if handler is not None else []
        if isinstance(values, dict):
            return {"completion": values}
        values = [str(v) for v in values]
        return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}

    def connection_opened(self, conn: ServerConnection) -> None:
        """Track a new connection (for notifications)."""
        with self._lock:
            self._connections.add(conn)

    def connection_closed(self, conn: ServerConnection) -> None:
        """Forget a connection that was lost."""
        with self._lock:
            self._connections.discard(conn)

    def __repr__(self) -> str:
        return f"FakeServer({self.name!r}, {self.version!r})"


class _ServedTransport(Transport):
    """The client end of a memory pair whose server end runs a :class:`FakeServer`."""

    def __init__(self, server: FakeServer) -> None:
        self._server = server
        self._client_end, self._server_end = create_pair()

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        conn = ServerConnection(self._server, self._server_end.send, page_size=self._server.page_size)
        self._server.connection_opened(conn)
        self._server_end.start(conn.feed, conn.connection_lost)
        self._client_end.start(on_message, on_close)

    def send(self, message: Mapping[str, Any]) -> None:
        self._client_end.send(message)

    def close(self) -> None:
        self._client_end.close()

    def describe(self) -> str:
        return f"in-process FakeServer {self._server.name!r}"
