"""The stateless era (2026-07-28) for the server engine behind :class:`~mcpsync.testing.FakeServer`.

A modern request carries its protocol version, client capabilities and
client info in ``params._meta``; there is no ``initialize``.  This module
answers such requests for a :class:`~mcpsync._server.ServerConnection`:
``server/discover``, the -32022 version check, ``resultType`` and cache hints
on results, ``subscriptions/listen`` streams, and Multi Round-Trip Requests.

MRTR is done the simple, stateless way: a tool that asks the client something
(``ctx.sample``/``ctx.elicit``/``ctx.list_roots``) and has no answer yet
raises :class:`InputRequired`; the call is answered with
``resultType: "input_required"``, and the client's retry runs the tool
function again from the start with every answer collected so far (carried in
``requestState``).  The n-th question of a run always has the same key, so a
tool that asks the same questions in the same order sees its answers.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from typing import TYPE_CHECKING, Any

from ._server_context import LOGGING_LEVELS, RpcError
from .types.modern import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
)

if TYPE_CHECKING:
    from ._server import ServerConnection

__all__ = [
    "ERAS",
    "MODERN_VERSIONS",
    "InputRequired",
    "Listens",
    "ModernCall",
    "handle",
    "modern_info",
    "stamp",
]

#: What ``FakeServer(era=...)`` accepts.
ERAS = ("legacy", "modern", "dual")
#: Stateless revisions the engine speaks, newest first.
MODERN_VERSIONS = ("2026-07-28",)

_METHOD_NOT_FOUND, _INVALID_PARAMS, _UNSUPPORTED_VERSION = -32601, -32602, -32022
#: Handshake-era methods that 2026-07-28 removed.
_REMOVED = {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
#: Results that must carry ``ttlMs``/``cacheScope`` (2026-07-28 ``CacheableResult``).
_CACHEABLE = {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
_LIST_CHANGED_FLAGS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


class InputRequired(Exception):
    """Raised inside a tool by :class:`ModernCall`: the client must answer *request* first."""

    def __init__(self, key: str, method: str, params: dict[str, Any] | None) -> None:
        super().__init__(key, method)
        self.key = key
        self.request: dict[str, Any] = {"method": method, "params": params or {}}


class ModernCall:
    """The modern-era side of one request: what its ``_meta`` said, and MRTR answers."""

    def __init__(self, meta: dict[str, Any], params: dict[str, Any]) -> None:
        caps = meta.get(CLIENT_CAPABILITIES_KEY)
        info = meta.get(CLIENT_INFO_KEY)
        level = meta.get(LOG_LEVEL_KEY)
        self.version = str(meta.get(PROTOCOL_VERSION_KEY))
        self.client_capabilities: dict[str, Any] = caps if isinstance(caps, dict) else {}
        self.client_info: dict[str, Any] = info if isinstance(info, dict) else {}
        #: ``None``: the request did not ask for log messages, so none may be sent.
        self.log_level: str | None = level if level in LOGGING_LEVELS else None
        self.answers: dict[str, Any] = _decode_state(params.get("requestState"))
        responses = params.get("inputResponses")
        if isinstance(responses, dict):
            self.answers.update(responses)
        self._asked = 0
        self._lock = threading.Lock()

    def answer(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The client's answer to this run's next question; raises :class:`InputRequired` if none yet."""
        with self._lock:
            self._asked += 1
            key = f"{method.replace('/', '-')}-{self._asked}"
        found = self.answers.get(key)
        if isinstance(found, dict):
            return found
        raise InputRequired(key, method, params)

    def input_required(self, needed: InputRequired) -> dict[str, Any]:
        """The ``input_required`` result asking for *needed*, carrying the answers so far."""
        return {
            "resultType": "input_required",
            "inputRequests": {needed.key: needed.request},
            "requestState": _encode_state(self.answers),
        }


def _encode_state(answers: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(answers, separators=(",", ":")).encode()).decode("ascii")


def _decode_state(state: Any) -> dict[str, Any]:
    if state is None:
        return {}
    try:
        decoded = json.loads(base64.urlsafe_b64decode(str(state).encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise RpcError(_INVALID_PARAMS, "invalid requestState") from None
    if not isinstance(decoded, dict):
        raise RpcError(_INVALID_PARAMS, "invalid requestState")
    return decoded


def modern_info(params: dict[str, Any]) -> ModernCall | None:
    """A :class:`ModernCall` when *params* carry a modern ``_meta``; else ``None`` (handshake era)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or PROTOCOL_VERSION_KEY not in meta:
        return None
    return ModernCall(meta, params)


def stamp(conn: ServerConnection, method: str, result: dict[str, Any]) -> dict[str, Any]:
    """Add what every 2026-07-28 result carries: ``resultType``, cache hints, ``serverInfo``."""
    stamped = {"resultType": "complete", **result}
    if method in _CACHEABLE:
        ttl = getattr(conn.app, "cache_ttl_ms", 0)
        stamped.setdefault("ttlMs", ttl if isinstance(ttl, int) else 0)
        stamped.setdefault("cacheScope", "private")
    meta = dict(stamped.get("_meta") or {})
    meta.setdefault(SERVER_INFO_KEY, conn.app.server_info())
    stamped["_meta"] = meta
    return stamped


def handle(conn: ServerConnection, request_id: Any, method: str, params: dict[str, Any], call: ModernCall) -> None:
    """Answer one modern request (``tools/call`` goes to a tool thread)."""
    if call.version not in MODERN_VERSIONS:
        conn._error(
            request_id,
            RpcError(
                _UNSUPPORTED_VERSION,
                "Unsupported protocol version",
                {"supported": list(MODERN_VERSIONS), "requested": call.version},
            ),
        )
        return
    conn.era = "modern"
    from ._server_tasks import route  # imported here: it builds on this module

    if route(conn, request_id, method, params, call):
        return
    if method == "tools/call":
        conn._start_tool(request_id, params, call)
        return
    if method == "subscriptions/listen":
        conn.listens.open(conn, request_id, params)
        return
    if method in _REMOVED:
        conn._error(request_id, RpcError(_METHOD_NOT_FOUND, f"Method not found: {method}"))
        return
    if method == "server/discover":
        result: dict[str, Any] = {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": conn.app.server_capabilities(call.version),
            "ttlMs": 0,
            "cacheScope": "private",
        }
        instructions = conn.app.server_instructions()
        if instructions is not None:
            result["instructions"] = instructions
        conn._respond(request_id, stamp(conn, method, result))
        return
    conn._answer_inline(request_id, method, params, lambda result: stamp(conn, method, result))


class Listens:
    """The open ``subscriptions/listen`` streams of one connection, by request id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[Any, dict[str, Any]] = {}

    def open(self, conn: ServerConnection, request_id: Any, params: dict[str, Any]) -> None:
        wanted = params.get("notifications")
        if not isinstance(wanted, dict):
            conn._error(request_id, RpcError(_INVALID_PARAMS, "subscriptions/listen needs notifications"))
            return
        # Honour every kind asked for; echo only what is switched on.
        honoured: dict[str, Any] = {flag: True for flag in _LIST_CHANGED_FLAGS.values() if wanted.get(flag)}
        uris = wanted.get("resourceSubscriptions")
        if isinstance(uris, list) and uris:
            honoured["resourceSubscriptions"] = [str(uri) for uri in uris]
        with self._lock:
            self._streams[request_id] = honoured
        conn.notify(
            "notifications/subscriptions/acknowledged",
            {"notifications": honoured, "_meta": {SUBSCRIPTION_ID_KEY: request_id}},
        )

    def cancelled(self, request_id: Any) -> bool:
        """The client cancelled a stream; True when *request_id* was one."""
        with self._lock:
            return self._streams.pop(request_id, None) is not None

    def publish(self, conn: ServerConnection, method: str, params: dict[str, Any]) -> None:
        """Send a change notification on every stream that opted in to it."""
        with self._lock:
            streams = list(self._streams.items())
        for stream_id, honoured in streams:
            flag = _LIST_CHANGED_FLAGS.get(method)
            if flag is not None:
                wanted = bool(honoured.get(flag))
            else:
                wanted = params.get("uri") in honoured.get("resourceSubscriptions", ())
            if wanted:
                conn.notify(method, {**params, "_meta": {SUBSCRIPTION_ID_KEY: stream_id}})

    def end_all(self, conn: ServerConnection) -> None:
        """End every stream gracefully: its response is the final frame."""
        with self._lock:
            streams, self._streams = list(self._streams), {}
        for stream_id in streams:
            conn._respond(stream_id, {"resultType": "complete", "_meta": {SUBSCRIPTION_ID_KEY: stream_id}})
