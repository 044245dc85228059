"""The MCP methods the server engine answers, in both eras, and :func:`dispatch`, which picks one.

A request whose ``params._meta`` names a protocol version is a 2026-07-28 (stateless) one: its
version is checked (-32022), it may use ``server/discover``, ``subscriptions/listen`` and the
tasks methods but not the handshake-era ones (-32601), and its result is stamped with
``resultType``, cache hints and ``serverInfo`` (:meth:`Request.stamp`).  Any other request
belongs to the handshake era, where only ``initialize`` and ``ping`` come before the session is
initialized.  ``FakeServer(era=...)`` can refuse either era.

Each handler takes the :class:`Request` and returns its ``result`` (``None``: answered
elsewhere: ``tools/call`` on its own thread, a listen stream when it ends) or raises
:class:`~mcpsync.testing.server.errors.RpcError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from mcpsync.testing.server.connection import ServerConnection
from mcpsync.testing.server.context import ToolContext
from mcpsync.testing.server.errors import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, UNSUPPORTED_VERSION
from mcpsync.testing.server.errors import RpcError
from mcpsync.testing.server.modern import InputRequired, ModernCall, decode_token, encode_token
from mcpsync.testing.server.registry import Registry
from mcpsync.testing.server.tasks import missing_capability
from mcpsync.types.modern import SERVER_INFO_KEY
from mcpsync.types.protocol import HANDSHAKE_VERSIONS, LOGGING_LEVELS, MODERN_VERSIONS


#: Methods of one era only: 2026-07-28 removed the first ones and added the second.
_HANDSHAKE_ONLY = {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
_MODERN_ONLY = {"server/discover", "subscriptions/listen", "tasks/get", "tasks/update", "tasks/cancel"}
_KINDS: dict[type, str] = {str: "a string", dict: "an object"}
#: Results that must carry ``ttlMs``/``cacheScope`` (2026-07-28 ``CacheableResult``).
_CACHEABLE = {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}


@attrs.frozen
class Request:
    """One request being answered."""

    app: Registry
    conn: ServerConnection
    id: Any
    method: str
    params: dict[str, Any]
    #: The 2026-07-28 side of the request (``None``: handshake era).
    modern: ModernCall | None

    def param(self, key: str, kind: type = str, default: Any = None) -> Any:
        """Param *key*, of type *kind* (``str`` or ``dict``); -32602 if it is not one.

        :param default: the value when *key* is missing or ``null``; ``None``: it is required.
        """
        value = found if (found := self.params.get(key)) is not None else default
        if not isinstance(value, kind):
            raise RpcError(INVALID_PARAMS, f"{self.method}: {key} must be {_KINDS[kind]}")
        return value

    def stamp(self, result: dict[str, Any]) -> dict[str, Any]:
        """*result* with what every 2026-07-28 result carries: ``resultType``, cache hints, ``serverInfo``."""
        if self.modern is None:
            return result
        stamped = {"resultType": "complete", **result}
        if self.method in _CACHEABLE:
            stamped.setdefault("ttlMs", self.app.cache_ttl_ms)
            stamped.setdefault("cacheScope", "private")
        stamped["_meta"] = {SERVER_INFO_KEY: self.app.server_info(), **(stamped.get("_meta") or {})}
        return stamped


Handler = Callable[[Request], "dict[str, Any] | None"]


def dispatch(app: Registry, conn: ServerConnection, request_id: Any, method: str, params: dict[str, Any]) -> None:
    """Answer one request (on the reader thread; ``tools/call`` goes on to a thread of its own)."""

    def work() -> dict[str, Any] | None:
        modern = ModernCall.of(params) if app.era != "legacy" else None
        if modern is not None:
            if modern.version not in MODERN_VERSIONS:
                data = {"supported": list(MODERN_VERSIONS), "requested": modern.version}
                raise RpcError(UNSUPPORTED_VERSION, "Unsupported protocol version", data)
            conn.era = "modern"
        handler = HANDLERS.get(method)
        refused = _HANDSHAKE_ONLY if modern is not None else _MODERN_ONLY
        if handler is None or method in refused or (method == "initialize" and app.era == "modern"):
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        if modern is None and conn.protocol_version is None and method not in ("initialize", "ping"):
            raise RpcError(INVALID_REQUEST, "the session is not initialized")
        request = Request(app, conn, request_id, method, params, modern)
        result = handler(request)
        return request.stamp(result) if result is not None else None

    conn.answer(request_id, work)


def _about(app: Registry, version: str) -> dict[str, Any]:
    about = {"capabilities": app.server_capabilities(version), "instructions": app.instructions}
    return {k: v for k, v in about.items() if v is not None}


def _initialize(r: Request) -> dict[str, Any]:
    requested = r.param("protocolVersion")
    if r.conn.protocol_version is not None:
        raise RpcError(INVALID_REQUEST, "already initialized")
    caps, info = r.params.get("capabilities"), r.params.get("clientInfo")
    version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
    r.conn.client_capabilities = caps if isinstance(caps, dict) else {}
    r.conn.client_info = info if isinstance(info, dict) else {}
    r.conn.protocol_version = version
    return {"protocolVersion": version, **_about(r.app, version), "serverInfo": r.app.server_info()}


def _discover(r: Request) -> dict[str, Any]:
    assert r.modern is not None
    return {"supportedVersions": list(MODERN_VERSIONS), **_about(r.app, r.modern.version), "ttlMs": 0,
            "cacheScope": "private"}


def _list(kind: str) -> Handler:
    """``<kind>/list``, in pages of ``page_size`` (a cursor names its list: another list's is refused)."""

    def page(r: Request) -> dict[str, Any]:
        items, start, cursor = r.app.listed(kind), 0, r.params.get("cursor")
        if cursor is not None:
            token = decode_token(cursor, "cursor")
            ok = isinstance(token, list) and len(token) == 2 and token[0] == kind and type(token[1]) is int
            start = token[1] if ok else -1
            if not 0 <= start <= len(items):
                raise RpcError(INVALID_PARAMS, "invalid cursor")
        end = len(items) if r.app.page_size is None else start + r.app.page_size
        return {kind: items[start:end], **({"nextCursor": encode_token([kind, end])} if end < len(items) else {})}

    return page


def _call_tool(r: Request) -> dict[str, Any] | None:
    name, arguments, meta = r.param("name"), r.param("arguments", dict, {}), r.params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    if r.modern is not None and (mode := r.app.task_mode(name)) is not None:
        if r.modern.declares_tasks:
            return r.app.tasks.start(r.conn, name, arguments, meta)
        if mode == "required":
            raise missing_capability(f"tool {name!r}")
    ctx = ToolContext(r.conn, r.id, meta, r.modern)

    def work() -> dict[str, Any]:
        try:
            return r.stamp(r.app.call_tool(name, arguments, ctx))
        except InputRequired as needed:  # 2026-07-28: ask, and run the tool again on the retry
            return needed.result()

    r.conn.start_call(r.id, ctx.cancelled, work)
    return None


def _subscribe(subscribed: bool) -> Handler:
    def handle(r: Request) -> dict[str, Any]:
        (r.conn.subscriptions.add if subscribed else r.conn.subscriptions.discard)(r.param("uri"))
        return {}

    return handle


def _complete(r: Request) -> dict[str, Any]:
    ref, argument, context = r.param("ref", dict), r.param("argument", dict), r.params.get("context")
    if not isinstance(argument.get("name"), str):
        raise RpcError(INVALID_PARAMS, "completion/complete: argument needs a name")
    return r.app.complete(ref, argument, context if isinstance(context, dict) else None)


def _set_level(r: Request) -> dict[str, Any]:
    if (level := r.params.get("level")) not in LOGGING_LEVELS:
        raise RpcError(INVALID_PARAMS, f"unknown logging level {level!r}")
    r.conn.log_level = str(level)
    return {}


def _task(r: Request) -> dict[str, Any]:
    assert r.modern is not None
    return r.app.tasks.handle(r.method, r.params, r.modern)


#: Every method the engine answers; anything else is -32601.
HANDLERS: dict[str, Handler] = {
    "initialize": _initialize, "ping": lambda r: {}, "server/discover": _discover,
    "tools/list": _list("tools"), "resources/list": _list("resources"), "prompts/list": _list("prompts"),
    "resources/templates/list": _list("resourceTemplates"),
    "tools/call": _call_tool,
    "resources/read": lambda r: r.app.read_resource(r.param("uri")),
    "resources/subscribe": _subscribe(True), "resources/unsubscribe": _subscribe(False),
    "prompts/get": lambda r: r.app.get_prompt(r.param("name"), r.param("arguments", dict, {})),
    "completion/complete": _complete,
    "logging/setLevel": _set_level,
    "subscriptions/listen": lambda r: r.conn.listen(r.id, r.params),  # answered when the stream ends
    "tasks/get": _task, "tasks/update": _task, "tasks/cancel": _task,
}
