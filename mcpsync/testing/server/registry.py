"""The feature registry behind :class:`~mcpsync.testing.FakeServer`.

Holds the registered tools, resources, templates, prompts and the completion handler, and
runs them for the method table (:mod:`.methods`), turning Python values into wire dicts with
:mod:`.convert`.  :class:`~mcpsync.testing.FakeServer` adds the decorators that fill it and
the ways to run it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from mcpsync.testing.server import convert
from mcpsync.testing.server.connection import ServerConnection
from mcpsync.testing.server.context import ToolContext
from mcpsync.testing.server.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND, ClientRequestError, RpcError
from mcpsync.testing.server.modern import InputRequired
from mcpsync.testing.server.tasks import ServerTasks
from mcpsync.types.protocol import HANDSHAKE_VERSIONS
from mcpsync.types.tasks import TASKS_EXTENSION_ID


#: What ``FakeServer(era=...)`` accepts.
ERAS = ("legacy", "modern", "dual")
#: The kinds of feature, named as their list results name them, and the wire key naming one.
KEYS = {"tools": "name", "resources": "uri", "resourceTemplates": "uriTemplate", "prompts": "name"}


class ToolFailure(Exception):
    """Raise from a tool to return ``isError: true`` with this message as the text."""


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


@attrs.frozen
class Feature:
    """One registered function and its wire description."""

    fn: Callable[..., Any]
    wire: dict[str, Any]
    #: A tool's :class:`ToolContext` parameter.
    ctx_param: str | None = None
    #: A tool's task mode (``"optional"``, ``"required"``; ``None``: never a task).
    task: str | None = None
    #: A resource template's matcher.
    template: convert.UriTemplate | None = None


class Registry:
    """Registered features, and running them for the engine (thread-safe)."""

    def __init__(self, name: str, version: str = "0.1.0", *, instructions: str | None = None,
                 page_size: int | None = None, capabilities: Mapping[str, Any] | None = None, era: str = "dual",
                 cache_ttl_ms: int = 0) -> None:
        if era not in ERAS:
            raise ValueError(f"era must be one of {', '.join(ERAS)}; got {era!r}")
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.name = name
        self.version = version
        self.instructions = instructions
        self.page_size = page_size
        self.era = era
        self.cache_ttl_ms = cache_ttl_ms
        self._capabilities = dict(capabilities) if capabilities is not None else None
        self._lock = threading.Lock()
        self._features: dict[str, dict[str, Feature]] = {kind: {} for kind in KEYS}
        self._completion: Callable[..., Any] | None = None
        self._connections: set[ServerConnection] = set()
        #: Tasks of the tools registered with ``task=`` (all connections share them).
        self.tasks = ServerTasks(self.call_tool)

    def _add(self, kind: str, feature: Feature) -> None:
        with self._lock:
            self._features[kind][feature.wire[KEYS[kind]]] = feature

    def _get(self, kind: str, key: str) -> Feature | None:
        with self._lock:
            return self._features[kind].get(key)

    def _all(self, kind: str) -> list[Feature]:
        with self._lock:
            return list(self._features[kind].values())

    def server_info(self) -> dict[str, Any]:
        """``serverInfo``."""
        return {"name": self.name, "version": self.version}

    def server_capabilities(self, protocol_version: str) -> dict[str, Any]:
        """The capabilities to declare for *protocol_version*."""
        if self._capabilities is not None:
            return dict(self._capabilities)
        caps: dict[str, Any] = {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True},
                                "prompts": {"listChanged": True}, "logging": {}}
        if protocol_version != "2024-11-05":  # completions arrived in 2025-03-26
            caps["completions"] = {}
        if protocol_version not in HANDSHAKE_VERSIONS and any(t.task for t in self._all("tools")):
            caps["extensions"] = {TASKS_EXTENSION_ID: {}}  # the stateless era has extensions
        return caps

    def listed(self, kind: str) -> list[dict[str, Any]]:
        """Every feature of *kind* (``"tools"``, ``"resources"`` ...), as wire dicts."""
        return [dict(f.wire) for f in self._all(kind)]

    def task_mode(self, name: str) -> str | None:
        """How tool *name* runs as a task (``None``: it does not)."""
        return tool.task if (tool := self._get("tools", name)) is not None else None

    def call_tool(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        """Run a tool on the calling thread and convert its result (a failure is ``isError``).

        :raises RpcError: for an unknown tool, or raised by the tool itself.
        :raises ~mcpsync.testing.server.modern.InputRequired: the tool asked a 2026-07-28 client.
        """
        if (tool := self._get("tools", name)) is None:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}")
        if (problem := convert.check_arguments(tool.wire["inputSchema"], arguments)) is not None:
            return _error_result(problem)
        kwargs = {**arguments, tool.ctx_param: ctx} if tool.ctx_param is not None else arguments
        try:
            value = tool.fn(**kwargs)
        except ClientRequestError as exc:
            return _error_result(f"request to the client failed: {exc}")
        except (InputRequired, RpcError):
            raise  # not failures: a question for a 2026-07-28 client, or a deliberate JSON-RPC error
        except Exception as exc:
            return _error_result(str(exc) if isinstance(exc, ToolFailure) else f"{type(exc).__name__}: {exc}")
        return convert.tool_result(value, tool.wire.get("outputSchema"))

    def read_resource(self, uri: str) -> dict[str, Any]:
        """Read a resource, or the first template that matches *uri*."""
        if (resource := self._get("resources", uri)) is not None:
            value = resource.fn()
        else:
            for candidate in self._all("resourceTemplates"):
                variables = candidate.template.match(uri) if candidate.template is not None else None
                if variables is not None:
                    resource, value = candidate, candidate.fn(**variables)
                    break
        if resource is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
        return {"contents": convert.resource_contents(uri, value, resource.wire.get("mimeType"))}

    def get_prompt(self, name: str, arguments: dict[str, str]) -> dict[str, Any]:
        """Render a prompt."""
        if (prompt := self._get("prompts", name)) is None:
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {name}")
        declared = prompt.wire["arguments"]
        missing = [a["name"] for a in declared if a["required"] and a["name"] not in arguments]
        unknown = sorted(set(arguments) - {a["name"] for a in declared})
        if missing or unknown:
            raise RpcError(INVALID_PARAMS, f"Invalid arguments for prompt {name}: missing {missing}, unknown {unknown}")
        described = {"description": prompt.wire["description"]} if "description" in prompt.wire else {}
        return {"messages": convert.prompt_messages(prompt.fn(**arguments)), **described}

    def complete(self, ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None) -> dict[str, Any]:
        """Answer ``completion/complete`` with the registered handler (no handler: no values)."""
        values: Any = self._completion(ref, argument, context) if self._completion is not None else []
        if isinstance(values, dict):
            return {"completion": values}
        values = [str(v) for v in values]
        return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}
