"""What the HTTP transport mirrors of MCP into HTTP headers, and reads back from error bodies.

A transport moves whole JSON values; it builds no MCP request of its own (a lost
session or a stale tool schema is the client's to recover from).  What it does know
of MCP is header framing, and it is all here:

* **the session's headers** (handshake era): the ``Mcp-Session-Id`` the server gave
  in its ``initialize`` reply (checked: visible ASCII, bounded) and the negotiated
  ``protocolVersion``, sent as ``MCP-Protocol-Version``;
* **routing headers** (2026-07-28): a modern request mirrors parts of its body into
  headers so that proxies can route without parsing JSON: ``MCP-Protocol-Version``,
  ``Mcp-Method``, ``Mcp-Name`` and one ``Mcp-Param-{Name}`` per tool parameter whose
  schema says ``x-mcp-header`` (basic/transports/streamable-http.mdx, *Request
  Metadata*).  :class:`ToolHeaders` learns each tool's annotated parameters from the
  ``tools/list`` results that pass through, and drops tools whose annotations break
  the spec's constraints (the spec requires a client on HTTP to exclude them);
* **errors** (2026-07-28): a modern server answers 400 (or 404 for an unknown
  method) with a JSON-RPC error in the body.  Such a body is the answer to the
  request and is delivered as one; only a body that is not a recognised modern
  error means a handshake-era server (*Backward Compatibility*).

The headers are computed here, from the message being sent, rather than by the
client: they are how this one transport frames a message, as ``Content-Type`` is.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from mcpsync.transports.base import CANCELLED, cancelled_request_id

__all__ = ["CANCELLED", "INITIALIZE", "INITIALIZED", "ToolHeaders", "cancelled_request_id", "header_value", "is_modern",
           "modern_error", "routing_headers", "rpc_error_body", "valid_session_id"]

log = logging.getLogger(__name__)

VERSION_META = "io.modelcontextprotocol/protocolVersion"
#: Methods whose target is mirrored in ``Mcp-Name``.
NAME_PARAMS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # SEP-2663: task requests are routed by their task id.
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
INITIALIZE = "initialize"
INITIALIZED = "notifications/initialized"
_MAX_SESSION_ID = 1024
#: Errors only a modern server sends (HeaderMismatch, MissingRequiredClientCapability,
#: UnsupportedProtocolVersion); -32601 counts too when it comes with 404.
_MODERN_CODES = frozenset({-32020, -32021, -32022})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_SAFE_INT = 2**53 - 1
_PRIMITIVE = ("string", "integer", "boolean")


def header_value(value: str) -> str:
    """*value* as a header: verbatim when printable ASCII, else the base64 sentinel form."""
    plain = value.isascii() and value.isprintable() and value == value.strip()
    if plain and not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def _version(message: Mapping[str, Any]) -> str | None:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(VERSION_META) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def is_modern(message: Mapping[str, Any]) -> bool:
    """Whether *message* is a 2026-07-28 request (it carries the per-request version)."""
    return isinstance(message.get("method"), str) and _version(message) is not None


def routing_headers(message: Mapping[str, Any], tools: ToolHeaders | None = None) -> dict[str, str]:
    """The headers mirrored from a modern request's body (empty for handshake-era messages)."""
    version = _version(message)
    method = message.get("method")
    if version is None or not isinstance(method, str):
        return {}
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    params = message.get("params")
    key = NAME_PARAMS.get(method)
    name = params.get(key) if key is not None and isinstance(params, dict) else None
    if isinstance(name, str):
        headers["Mcp-Name"] = header_value(name)
        if method == "tools/call" and tools is not None and isinstance(params, dict):
            headers.update(tools.headers_for(name, params.get("arguments")))
    return headers


def rpc_error_body(raw: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error response in an HTTP error body, if that is what it is."""
    try:
        parsed = json.loads(raw) if raw.strip() else None
    except ValueError:
        return None
    if not isinstance(parsed, dict) or parsed.get("jsonrpc") != "2.0":
        return None
    error = parsed.get("error")
    if not isinstance(error, dict) or isinstance(error.get("code"), bool) or not isinstance(error.get("code"), int):
        return None
    return parsed


def modern_error(status: int, body: dict[str, Any] | None, request_id: Any) -> dict[str, Any] | None:
    """The error to deliver for a modern request refused with *status*, or ``None``.

    A body counts when its code is one only modern servers use, when it is
    -32601 with 404 (the modern "no such method"), or when it names our
    request id (a handler's error the server mapped to an HTTP status).
    """
    if body is None:
        return None
    error = body["error"]
    code = error["code"]
    same_id = "id" in body and body["id"] == request_id and request_id is not None
    if code in _MODERN_CODES or (code == -32601 and status == 404) or same_id:
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return None


def _annotations(schema: Any) -> list[tuple[tuple[str, ...], str]]:
    """``(property path, header name)`` of each ``x-mcp-header`` in *schema*.

    :raises ValueError: naming the first constraint an annotation breaks.
    """
    found: list[tuple[tuple[str, ...], str]] = []

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, (*path, str(index)))
            return
        if not isinstance(node, dict):
            return
        if "x-mcp-header" in node:
            name = node["x-mcp-header"]
            if not path or len(path) % 2 or any(step != "properties" for step in path[0::2]):
                raise ValueError(f"x-mcp-header at {'/'.join(path) or 'the root'} is not reachable"
                                 " through 'properties' alone")
            if not isinstance(name, str) or not _TOKEN.fullmatch(name):
                raise ValueError(f"x-mcp-header {name!r} is not an HTTP header token")
            if node.get("type") not in _PRIMITIVE:
                raise ValueError(f"x-mcp-header {name!r} is on a parameter of type {node.get('type')!r}"
                                 " (only string, integer and boolean may be mirrored)")
            found.append((path[1::2], name))
        for key, value in node.items():
            if key != "x-mcp-header":
                walk(value, (*path, key))

    walk(schema, ())
    names = [name.lower() for _, name in found]
    if len(set(names)) != len(names):
        raise ValueError("x-mcp-header names are not unique (case-insensitively)")
    return found


def _header_text(value: Any) -> str | None:
    """A parameter value as its header text (Value Encoding); ``None``: no header.

    ``null`` and an absent value send no header; an integer written ``42.0`` is
    the integer 42 to JSON Schema and goes out as ``42``.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return str(value) if -_SAFE_INT <= value <= _SAFE_INT else None
    if isinstance(value, str):
        return header_value(value)
    return None  # null, or a value the schema does not allow: nothing to mirror


class ToolHeaders:
    """Which arguments of which tool go into ``Mcp-Param-*`` headers.

    Thread-safe without a lock: one ``dict.update`` per page and one ``dict.get`` per call,
    each atomic, of lists never changed once stored.
    """

    def __init__(self) -> None:
        self._by_tool: dict[str, list[tuple[tuple[str, ...], str]]] = {}

    def learn(self, result: Any) -> Any:
        """Record the tools of one ``tools/list`` page; return it without invalid tools."""
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return result
        kept: list[Any] = []
        learned: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for tool in result["tools"]:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                kept.append(tool)  # the session's validation reports it
                continue
            try:
                learned[name] = _annotations(tool.get("inputSchema"))
            except ValueError as exc:
                log.warning("ignoring tool %r: invalid x-mcp-header annotation: %s", name, exc)
                continue
            kept.append(tool)
        self._by_tool.update(learned)
        if len(kept) == len(result["tools"]):
            return result
        return {**result, "tools": kept}

    def headers_for(self, tool: str, arguments: Any) -> dict[str, str]:
        """The ``Mcp-Param-*`` headers for a call of *tool* with *arguments*."""
        annotations = self._by_tool.get(tool, [])
        headers: dict[str, str] = {}
        for path, name in annotations:
            value: Any = arguments
            for step in path:
                value = value.get(step) if isinstance(value, dict) else None
            text = _header_text(value)
            if text is not None:
                headers[f"Mcp-Param-{name}"] = text
        return headers


# -- the handshake era's session, and cancellation ---------------------------------------------


def valid_session_id(value: str) -> bool:
    """Whether *value* may be an ``Mcp-Session-Id`` (visible ASCII, bounded)."""
    return 0 < len(value) <= _MAX_SESSION_ID and all(0x21 <= ord(c) <= 0x7E for c in value)
