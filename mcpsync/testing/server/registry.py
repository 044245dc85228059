"""The feature registry behind :class:`~mcpsync.testing.FakeServer`.

Holds the registered tools, resources, templates, prompts and the completion
handler, and answers the engine's :class:`~mcpsync.testing.server.context.ServerApp`
calls with wire dicts.  :class:`~mcpsync.testing.FakeServer` adds the
decorators that fill it and the ways to run it.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcpsync.testing.server import convert as convert
from mcpsync.testing.server.context import PROTOCOL_VERSIONS, ClientRequestError, RpcError, ToolContext
from mcpsync.testing.server.call import InputRequired
from mcpsync.testing.server.tasks import ServerTasks
from mcpsync.types.tasks import TASKS_EXTENSION_ID

if TYPE_CHECKING:
    from mcpsync.testing.server.context import Peer

__all__ = ["Registry", "ResourceEntry", "ToolEntry", "ToolFailure", "doc_summary"]

_INVALID_PARAMS = -32602
_RESOURCE_NOT_FOUND = -32002


class ToolFailure(Exception):
    """Raise from a tool to return ``isError: true`` with this message as the text."""


class ToolEntry:
    def __init__(
        self,
        fn: Callable[..., Any],
        name: str,
        description: str | None,
        output_schema: Mapping[str, Any] | None,
        title: str | None,
        annotations: Mapping[str, Any] | None,
        task: str | None = None,
    ) -> None:
        self.fn = fn
        #: ``"optional"`` or ``"required"``: runs as a task (2026-07-28); ``None``: never.
        self.task = task
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


class ResourceEntry:
    def __init__(
        self,
        fn: Callable[..., Any],
        wire: dict[str, Any],
        mime_type: str | None,
        template: convert.UriTemplate | None = None,
    ) -> None:
        self.fn = fn
        self.wire = wire
        self.mime_type = mime_type
        self.template = template


def doc_summary(fn: Callable[..., Any]) -> str | None:
    text = inspect.getdoc(fn)
    return text.split("\n\n")[0].strip() or None if text else None


class Registry:
    """Registered features plus the :class:`ServerApp` methods over them (thread-safe)."""

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        instructions: str | None = None,
        page_size: int | None = None,
        capabilities: Mapping[str, Any] | None = None,
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.name = name
        self.version = version
        self.instructions = instructions
        self.page_size = page_size
        self._capabilities = dict(capabilities) if capabilities is not None else None
        #: ``ttlMs`` of cacheable 2026-07-28 results (0: immediately stale).
        self.cache_ttl_ms = 0
        self._lock = threading.Lock()
        self._tools: dict[str, ToolEntry] = {}
        self._resources: dict[str, ResourceEntry] = {}
        self._templates: dict[str, ResourceEntry] = {}
        self._prompts: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {}
        self._completion: Callable[..., Any] | None = None
        self._connections: set[Peer] = set()
        #: Tasks of the tools registered with ``task=`` (all connections share them).
        self.tasks = ServerTasks()

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
        if protocol_version not in PROTOCOL_VERSIONS:  # the stateless era: extensions exist
            with self._lock:
                if any(t.task is not None for t in self._tools.values()):
                    caps["extensions"] = {TASKS_EXTENSION_ID: {}}
        return caps

    def task_mode(self, name: str) -> str | None:
        """How tool *name* runs as a task (``None``: it does not)."""
        with self._lock:
            tool = self._tools.get(name)
        return tool.task if tool is not None else None

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
        except InputRequired:
            raise  # not a failure: the engine asks the client and runs the tool again
        except ClientRequestError as exc:
            return {
                "content": [{"type": "text", "text": f"request to the client failed: {exc}"}],
                "isError": True,
            }
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
        missing = [
            a["name"] for a in wire["arguments"] if a["required"] and a["name"] not in arguments
        ]
        unknown = sorted(set(arguments) - known)
        if missing or unknown:
            raise RpcError(
                _INVALID_PARAMS,
                f"Invalid arguments for prompt {name}: missing {missing}, unknown {unknown}",
            )
        result: dict[str, Any] = {"messages": convert.prompt_messages(fn(**arguments))}
        if "description" in wire:
            result["description"] = wire["description"]
        return result

    def complete(
        self, ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Answer ``completion/complete`` with the registered handler (no handler: no values)."""
        handler = self._completion
        values: Any = handler(ref, argument, context) if handler is not None else []
        if isinstance(values, dict):
            return {"completion": values}
        values = [str(v) for v in values]
        return {
            "completion": {
                "values": values[:100],
                "total": len(values),
                "hasMore": len(values) > 100,
            }
        }

    def connection_opened(self, conn: Peer) -> None:
        """Track a new connection (for notifications)."""
        with self._lock:
            self._connections.add(conn)

    def connection_closed(self, conn: Peer) -> None:
        """Forget a connection that was lost."""
        with self._lock:
            self._connections.discard(conn)
