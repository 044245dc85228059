"""The MCP methods a connection answers, as a table.

The connection is a :class:`~mcpsync.testing.server.connection.ServerConnection`, seen
here through the :class:`~mcpsync.testing.server.context.Peer` protocol.

Each handler takes the connection and the request's ``params`` and returns the
``result`` dict, or raises :class:`~mcpsync.testing.server.context.RpcError`.  The
features themselves come from the connection's :class:`ServerApp`; this module
adds the protocol around them: version negotiation, pagination cursors,
parameter checks.  ``tools/call`` is listed here but run on its own thread by
the connection.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Callable

from mcpsync.testing.server.context import (
    LATEST_PROTOCOL_VERSION,
    LOGGING_LEVELS,
    PROTOCOL_VERSIONS,
    Peer,
    RpcError,
)

__all__ = ["HANDLERS", "Handler"]

_INVALID_REQUEST, _INVALID_PARAMS = -32600, -32602

#: A method implementation: ``(connection, params) -> result``.
Handler = Callable[[Peer, dict[str, Any]], dict[str, Any]]


def _initialize(conn: Peer, params: dict[str, Any]) -> dict[str, Any]:
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise RpcError(_INVALID_PARAMS, "initialize needs a protocolVersion string")
    if conn.protocol_version is not None:
        raise RpcError(_INVALID_REQUEST, "already initialized")
    version = requested if requested in PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
    caps = params.get("capabilities")
    info = params.get("clientInfo")
    conn.client_capabilities = caps if isinstance(caps, dict) else {}
    conn.client_info = info if isinstance(info, dict) else {}
    conn.protocol_version = version
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": conn.app.server_capabilities(version),
        "serverInfo": conn.app.server_info(),
    }
    instructions = conn.app.server_instructions()
    if instructions is not None:
        result["instructions"] = instructions
    return result


def _page(
    conn: Peer, items: list[dict[str, Any]], params: dict[str, Any], key: str
) -> dict[str, Any]:
    start = 0
    cursor = params.get("cursor")
    if cursor is not None:
        start = _decode_cursor(cursor, key)
        if start > len(items):
            raise RpcError(_INVALID_PARAMS, "invalid cursor")
    if conn.page_size is None:
        return {key: items[start:]}
    end = start + conn.page_size
    result: dict[str, Any] = {key: items[start:end]}
    if end < len(items):
        result["nextCursor"] = _encode_cursor(end, key)
    return result


def _encode_cursor(offset: int, key: str) -> str:
    # Naming the list in the cursor lets a cursor from another list be rejected.
    return base64.urlsafe_b64encode(f"{key}:{offset}".encode()).decode("ascii")


def _decode_cursor(cursor: Any, key: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(str(cursor).encode("ascii")).decode()
        kind, _, number = raw.partition(":")
        offset = int(number)
    except (ValueError, binascii.Error, UnicodeError):
        raise RpcError(_INVALID_PARAMS, "invalid cursor") from None
    if kind != key or offset < 0:
        raise RpcError(_INVALID_PARAMS, "invalid cursor")
    return offset


def _set_level(conn: Peer, params: dict[str, Any]) -> dict[str, Any]:
    level = params.get("level")
    if level not in LOGGING_LEVELS:
        raise RpcError(_INVALID_PARAMS, f"unknown logging level {level!r}")
    conn.log_level = str(level)
    return {}


def _required_str(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise RpcError(_INVALID_PARAMS, f"{key} must be a string")
    return value


def _subscribe(conn: Peer, params: dict[str, Any]) -> dict[str, Any]:
    conn.set_subscribed(_required_str(params, "uri"), True)
    return {}


def _unsubscribe(conn: Peer, params: dict[str, Any]) -> dict[str, Any]:
    conn.set_subscribed(_required_str(params, "uri"), False)
    return {}


def _complete(conn: Peer, params: dict[str, Any]) -> dict[str, Any]:
    ref, argument, context = params.get("ref"), params.get("argument"), params.get("context")
    if not (
        isinstance(ref, dict)
        and isinstance(argument, dict)
        and isinstance(argument.get("name"), str)
    ):
        raise RpcError(_INVALID_PARAMS, "completion/complete needs a ref and an argument name")
    return conn.app.complete(ref, argument, context if isinstance(context, dict) else None)


def _get_prompt(conn: Peer, params: dict[str, Any]) -> dict[str, Any]:
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise RpcError(_INVALID_PARAMS, "arguments must be an object")
    return conn.app.get_prompt(_required_str(params, "name"), arguments)


def _not_inline(conn: Peer, params: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError("tools/call runs on its own thread, never through the table")


#: Every method the engine answers; anything else is -32601.
HANDLERS: dict[str, Handler] = {
    "initialize": _initialize,
    "ping": lambda conn, params: {},
    "tools/list": lambda conn, params: _page(conn, conn.app.list_tools(), params, "tools"),
    "tools/call": _not_inline,
    "resources/list": lambda conn, params: _page(
        conn, conn.app.list_resources(), params, "resources"
    ),
    "resources/templates/list": lambda conn, params: _page(
        conn, conn.app.list_resource_templates(), params, "resourceTemplates"
    ),
    "resources/read": lambda conn, params: conn.app.read_resource(_required_str(params, "uri")),
    "resources/subscribe": _subscribe,
    "resources/unsubscribe": _unsubscribe,
    "prompts/list": lambda conn, params: _page(conn, conn.app.list_prompts(), params, "prompts"),
    "prompts/get": _get_prompt,
    "completion/complete": _complete,
    "logging/setLevel": _set_level,
}
