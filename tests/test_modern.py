"""The stateless era (2026-07-28) against a scripted server on the memory transport.

The official SDK server covers the same features end to end (tests/test_sdk_stdio.py); these
tests pin down the client's rules exactly: the probe and its fallbacks, per-request ``_meta``,
MRTR rounds, listen streams, cache hints and the wire format of everything sent.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest

import mcpsync
from mcpsync import types
from mcpsync.transports.memory import create_pair

from schema_util import validate_against

MODERN = "2026-07-28"
META = "io.modelcontextprotocol/"
Handler = Callable[[dict[str, Any]], Any]


class ScriptedServer:
    """Answers each request with ``handlers[method](message)``; records everything received."""

    def __init__(self, handlers: dict[str, Handler], *, modern: bool = True) -> None:
        self.handlers = dict(handlers)
        self.received: list[dict[str, Any]] = []
        self.lock = threading.Condition()
        self.client_end, self.end = create_pair()
        if modern:
            self.handlers.setdefault("server/discover", lambda m: {
                "resultType": "complete",
                "supportedVersions": [MODERN],
                "capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True},
                                 "prompts": {}, "logging": {}},
                "instructions": "scripted",
                "_meta": {META + "serverInfo": {"name": "scripted", "version": "2.0"}},
            })
        self.end.start(self._on_message, lambda exc: None)

    def _on_message(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.received.append(message)
            self.lock.notify_all()
        if "id" not in message or "method" not in message:
            return
        handler = self.handlers.get(message["method"])
        if handler is None:
            self.send({"jsonrpc": "2.0", "id": message["id"],
                       "error": {"code": -32601, "message": "Method not found"}})
            return
        outcome = handler(message)
        if outcome is None:
            return  # the handler answers later (or never)
        if isinstance(outcome, Exception):
            raise outcome
        key = "error" if "code" in outcome and "message" in outcome and len(outcome) <= 3 else "result"
        self.send({"jsonrpc": "2.0", "id": message["id"], key: outcome})

    def send(self, message: dict[str, Any]) -> None:
        self.end.send(message)

    def requests(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [m for m in self.received if m.get("method") == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The server end receives on its own thread: wait until it has seen *count* of *method*."""
        def found() -> list[dict[str, Any]]:
            return [m for m in self.received if m.get("method") == method]

        with self.lock:
            if self.lock.wait_for(lambda: len(found()) >= count, timeout):
                return found()
            raise AssertionError(f"server did not receive {count} x {method}: {found()}")

    def client(self, **options: Any) -> mcpsync.Client:
        return mcpsync.Client(self.client_end, **options)

    def close(self) -> None:
        self.end.close()


@pytest.fixture
def make_server() -> Any:
    servers: list[ScriptedServer] = []

    def make(handlers: dict[str, Handler], **kwargs: Any) -> ScriptedServer:
        server = ScriptedServer(handlers, **kwargs)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


def complete(result: dict[str, Any]) -> dict[str, Any]:
    return {"resultType": "complete", **result}


def tool_list(message: dict[str, Any]) -> dict[str, Any]:
    return complete({"tools": [{"name": "t", "inputSchema": {"type": "object"}}],
                     "ttlMs": 60_000, "cacheScope": "public"})


def test_probe_adopts_modern_and_every_request_carries_meta(make_server: Any) -> None:
    server = make_server({"tools/list": tool_list})
    with server.client(client_info=("probe-test", "1.2")) as client:
        assert client.era == "modern"
        assert client.protocol_version == MODERN
        assert (client.server_info.name, client.server_info.version) == ("scripted", "2.0")
        assert client.instructions == "scripted"
        assert [t.name for t in client.list_tools()] == ["t"]
    assert not server.requests("initialize")
    for message in server.requests("server/discover") + server.requests("tools/list"):
        meta = message["params"]["_meta"]
        assert meta[META + "protocolVersion"] == MODERN
        assert meta[META + "clientInfo"] == {"name": "probe-test", "version": "1.2"}
        assert meta[META + "clientCapabilities"] == {}
        assert META + "logLevel" not in meta
        validate_against(MODERN, "ClientRequest", message)


def test_legacy_server_falls_back_after_one_probe(make_server: Any) -> None:
    def initialize(message: dict[str, Any]) -> dict[str, Any]:
        return {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "old", "version": "1"}}

    server = make_server({"initialize": initialize, "ping": lambda m: {}}, modern=False)
    with server.client() as client:
        assert client.era == "legacy"
        assert client.protocol_version == "2025-06-18"
        client.ping()
    assert len(server.requests("server/discover")) == 1
    assert "_meta" not in server.requests("initialize")[0]["params"]
    assert "_meta" not in (server.requests("ping")[0].get("params") or {})


def test_unsupported_version_lists_legacy_versions_only(make_server: Any) -> None:
    def discover(message: dict[str, Any]) -> dict[str, Any]:
        return {"code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2025-03-26"], "requested": MODERN}}

    def initialize(message: dict[str, Any]) -> dict[str, Any]:
        return {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {},
                "serverInfo": {"name": "dual", "version": "1"}}

    server = make_server({"server/discover": discover, "initialize": initialize}, modern=False)
    with server.client() as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-03-26")
    assert server.requests("initialize")[0]["params"]["protocolVersion"] == "2025-03-26"


def test_pinned_modern_against_legacy_server_raises(make_server: Any) -> None:
    server = make_server({}, modern=False)
    client = server.client(mode=MODERN)
    with pytest.raises(mcpsync.UnsupportedProtocolVersion):
        client.connect()
    client.close()
    assert not server.requests("initialize")


def test_probe_timeout_falls_back(make_server: Any) -> None:
    def initialize(message: dict[str, Any]) -> dict[str, Any]:
        return {"protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "slow", "version": "1"}}

    server = make_server({"server/discover": lambda m: None, "initialize": initialize}, modern=False)
    client = server.client()
    client._options.discover_timeout = 0.2
    with client:
        assert client.era == "legacy"


def test_mrtr_runs_the_same_handlers_and_retries(make_server: Any, tmp_path: Any) -> None:
    rounds: list[dict[str, Any]] = []

    def call(message: dict[str, Any]) -> dict[str, Any]:
        params = message["params"]
        rounds.append(params)
        if "inputResponses" not in params:
            return {"resultType": "input_required", "requestState": "opaque-1", "inputRequests": {
                "who": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "name?",
                    "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}}},
                "llm": {"method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
                    "maxTokens": 5}},
                "where": {"method": "roots/list", "params": {}},
            }}
        answers = params["inputResponses"]
        text = f"{answers['who']['content']['n']}/{answers['llm']['content']['text']}/{answers['where']['roots'][0]['uri']}"
        return complete({"content": [{"type": "text", "text": text}]})

    threads: list[str] = []

    def sampling(p: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        threads.append(threading.current_thread().name)
        return types.CreateMessageResult(types.TextContent("4"), model="m")

    def elicit(p: Any) -> types.ElicitResult:
        threads.append(threading.current_thread().name)
        return types.ElicitResult(action="accept", content={"n": "ada"})

    server = make_server({"tools/call": call})
    with server.client(sampling_handler=sampling, elicitation_handler=elicit, roots=[tmp_path]) as client:
        result = client.call_tool("t", {"x": 1})
    assert result.text == f"ada/4/{tmp_path.resolve().as_uri()}"
    assert len(rounds) == 2
    assert rounds[1]["requestState"] == "opaque-1"
    assert rounds[1]["arguments"] == {"x": 1}
    assert "requestState" not in rounds[0]
    calls = server.requests("tools/call")
    assert calls[0]["id"] != calls[1]["id"]
    assert all(name.startswith("mcpsync-handler") for name in threads) and len(threads) == 2
    caps = calls[0]["params"]["_meta"][META + "clientCapabilities"]
    assert caps == {"roots": {}, "sampling": {}, "elicitation": {"form": {}, "url": {}}}
    for message in calls:
        validate_against(MODERN, "ClientRequest", message)


def test_mrtr_rounds_are_bounded(make_server: Any) -> None:
    server = make_server({"tools/call": lambda m: {"resultType": "input_required", "requestState": "again"}})
    with server.client(max_queued_notifications=10) as client:
        client._options.max_input_rounds = 3
        with pytest.raises(mcpsync.ProtocolError, match="input_required"):
            client.call_tool("t")
    assert len(server.requests("tools/call")) == 4


def test_input_request_without_handler_is_a_protocol_error(make_server: Any) -> None:
    server = make_server({"prompts/get": lambda m: {"resultType": "input_required", "inputRequests": {
        "x": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}}}}})
    with server.client() as client:
        with pytest.raises(mcpsync.ProtocolError, match="no handler"):
            client.get_prompt("p")


def listen_handler(server_ref: list[ScriptedServer]) -> Handler:
    def listen(message: dict[str, Any]) -> None:
        server = server_ref[0]
        server.send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
            "_meta": {META + "subscriptionId": message["id"]},
            "notifications": message["params"]["notifications"]}})
        return None  # the stream stays open

    return listen


def notify(server: ScriptedServer, method: str, sub_id: Any, **params: Any) -> None:
    server.send({"jsonrpc": "2.0", "method": method,
                 "params": {"_meta": {META + "subscriptionId": sub_id}, **params}})


def test_listen_stream_delivers_tagged_notifications_and_closes(make_server: Any) -> None:
    ref: list[ScriptedServer] = []
    server = make_server({"subscriptions/listen": listen_handler(ref)})
    ref.append(server)
    with server.client() as client:
        with client.listen(tools=True, resource_uris=["file:///a"]) as sub:
            assert sub.acknowledged == {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}
            notify(server, "notifications/tools/list_changed", sub.id)
            notify(server, "notifications/resources/updated", sub.id, uri="file:///a")
            notify(server, "notifications/tools/list_changed", 999)  # another stream's
            first, second = sub.get(timeout=5), sub.get(timeout=5)
            assert first is not None and first.method == "notifications/tools/list_changed"
            assert second is not None and second.uri == "file:///a"
            assert sub.get(timeout=0.2) is None
            listen_id = sub.id
        cancels = server.wait_for("notifications/cancelled")
        assert [c["params"]["requestId"] for c in cancels] == [listen_id]
        # The server may end a stream itself (stdio: notifications/cancelled).
        sub = client.listen(prompts=True)
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": sub.id}})
        assert list(sub) == []
        assert sub.closed


def test_on_callbacks_ride_a_background_listen_stream(make_server: Any) -> None:
    ref: list[ScriptedServer] = []
    server = make_server({"subscriptions/listen": listen_handler(ref)})
    ref.append(server)
    got = threading.Event()
    with server.client() as client:
        client.on("notifications/tools/list_changed", lambda params: got.set())
        (listen,) = server.requests("subscriptions/listen")
        assert listen["params"]["notifications"] == {"toolsListChanged": True}
        client.subscribe_resource("file:///b")
        second = server.requests("subscriptions/listen")[-1]
        assert second["params"]["notifications"] == {"toolsListChanged": True,
                                                     "resourceSubscriptions": ["file:///b"]}
        assert server.wait_for("notifications/cancelled")[-1]["params"]["requestId"] == listen["id"]
        notify(server, "notifications/tools/list_changed", second["id"])
        assert got.wait(5)
    assert not server.requests("resources/subscribe")


def test_cache_hints_are_honoured_and_invalidated(make_server: Any) -> None:
    ref: list[ScriptedServer] = []
    server = make_server({"tools/list": tool_list, "subscriptions/listen": listen_handler(ref)})
    ref.append(server)
    with server.client() as client:
        client.list_tools()
        client.list_tools()
        assert len(server.requests("tools/list")) == 1
        client.list_tools(cache=False)
        assert len(server.requests("tools/list")) == 2
        changed = threading.Event()
        client.on("notifications/tools/list_changed", lambda p: changed.set())
        listen_id = server.requests("subscriptions/listen")[-1]["id"]
        notify(server, "notifications/tools/list_changed", listen_id)
        assert changed.wait(5)
        client.list_tools()
        assert len(server.requests("tools/list")) == 3


def test_logging_level_and_ping_in_the_modern_era(make_server: Any) -> None:
    logs: list[types.LoggingMessageNotificationParams] = []
    server = make_server({"tools/list": tool_list})
    with server.client(logging_handler=logs.append) as client:
        client.set_logging_level("error")
        client.list_tools(cache=False)
        client.ping()
    assert server.requests("tools/list")[-1]["params"]["_meta"][META + "logLevel"] == "error"
    assert len(server.requests("server/discover")) == 2  # the probe, then ping
    assert not server.requests("ping") and not server.requests("logging/setLevel")


def test_unknown_result_type_is_a_protocol_error(make_server: Any) -> None:
    server = make_server({"tools/call": lambda m: {"resultType": "task", "task": {}}})
    with server.client() as client:
        with pytest.raises(mcpsync.ProtocolError, match="resultType"):
            client.call_tool("t")


def test_notifications_that_beat_their_streams_registration_are_replayed(make_server: Any) -> None:
    # Over HTTP the acknowledgement can arrive on the reply stream before
    # listen() has registered the subscription: nothing may be lost.
    from mcpsync.client.subscriptions import Subscription
    from mcpsync.rpc.deadline import Deadline
    from mcpsync.rpc.session import PendingRequest

    server = make_server({})
    with server.client() as client:
        conn = client._conn
        assert conn is not None
        tag = {"_meta": {META + "subscriptionId": 4242}}
        conn._on_notification("notifications/subscriptions/acknowledged", {**tag, "notifications": {"toolsListChanged": True}})
        conn._on_notification("notifications/tools/list_changed", dict(tag))
        sub = Subscription(types.SubscriptionFilter(tools_list_changed=True))
        sub._bind(PendingRequest(4242, "subscriptions/listen", Deadline(None)))
        conn.router.add(sub)
        assert sub.wait_acknowledged(0) and sub.acknowledged == {"toolsListChanged": True}
        note = sub.get(timeout=1)
        assert note is not None and note.method == "notifications/tools/list_changed"
