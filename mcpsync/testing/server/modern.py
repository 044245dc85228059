"""The stateless era (2026-07-28) for the server engine behind :class:`~mcpsync.testing.FakeServer`.

A modern request carries its protocol version, client capabilities and
client info in ``params._meta``; there is no ``initialize``.  This module
answers such requests for a connection (a
:class:`~mcpsync.testing.server.connection.ServerConnection`, seen through
:class:`~mcpsync.testing.server.context.Peer`):
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

import threading
from typing import Any

from mcpsync.testing.server.call import InputRequired, ModernCall, modern_info
from mcpsync.testing.server.context import Peer
from mcpsync.testing.server.errors import RpcError
from mcpsync.testing.server.results import stamp
from mcpsync.testing.server.tasks import route
from mcpsync.types.modern import SUBSCRIPTION_ID_KEY
from mcpsync.types.protocol import MODERN_VERSIONS  # the stateless revisions spoken, newest first

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

_METHOD_NOT_FOUND, _INVALID_PARAMS, _UNSUPPORTED_VERSION = -32601, -32602, -32022
#: Handshake-era methods that 2026-07-28 removed.
_REMOVED = {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
_LIST_CHANGED_FLAGS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


def handle(conn: Peer, request_id: Any, method: str, params: dict[str, Any], call: ModernCall) -> None:
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

    def open(self, conn: Peer, request_id: Any, params: dict[str, Any]) -> None:
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

    def publish(self, conn: Peer, method: str, params: dict[str, Any]) -> None:
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

    def end_all(self, conn: Peer) -> None:
        """End every stream gracefully: its response is the final frame."""
        with self._lock:
            streams, self._streams = list(self._streams), {}
        for stream_id in streams:
            conn._respond(stream_id, {"resultType": "complete", "_meta": {SUBSCRIPTION_ID_KEY: stream_id}})
