"""The 2026-07-28 era against real servers: the official SDK's dual-era server and server-everything.

``tests/test_sdk_stdio.py`` runs every client feature in both eras; this file covers what only
the stateless era has (``subscriptions/listen``, cache hints, the -32022 retry) and what the
``server/discover`` probe costs against servers that speak only the handshake era.  Every
message is recorded by :class:`RecordingStdio`, so the tests count round trips exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sdk_catalog

import mcpsync
from mcpsync.client import options as _options
from mcpsync.transports.stdio.transport import StdioTransport

MODERN = "2026-07-28"
SUB_ID = "io.modelcontextprotocol/subscriptionId"

pytestmark = pytest.mark.timeout(60)


class RecordingStdio(StdioTransport):
    """A stdio transport that keeps every message it sends and receives, in order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log: list[tuple[str, dict[str, Any]]] = []
        self._log_lock = threading.Lock()

    def start(self, on_message: Any, on_close: Any) -> None:
        def received(message: dict[str, Any]) -> None:
            with self._log_lock:
                self.log.append(("in", message))
            on_message(message)

        super().start(received, on_close)

    def send(self, message: Any, deadline: Any = None) -> None:
        with self._log_lock:
            self.log.append(("out", dict(message)))
        super().send(message, deadline)

    def sent(self, method: str | None = None) -> list[dict[str, Any]]:
        with self._log_lock:
            return [m for d, m in self.log if d == "out" and (method is None or m.get("method") == method)]


Factory = Callable[..., tuple[mcpsync.Client, RecordingStdio]]


@pytest.fixture
def connect() -> Iterator[Factory]:
    """``connect(argv, **options)``: a connected client over a recording stdio transport."""
    clients: list[mcpsync.Client] = []

    def make(argv: list[str], **options: Any) -> tuple[mcpsync.Client, RecordingStdio]:
        options.setdefault("timeout", 20.0)
        # The SDK server answers the probe; on a loaded machine it may take longer than the
        # default discover_timeout (1 s), and initialize would go out behind it.
        options.setdefault("discover_timeout", 15.0)
        transport = RecordingStdio(argv[0], argv[1:])
        client = mcpsync.Client(transport, **options)
        clients.append(client)
        return client.connect(), transport

    yield make
    for client in clients:
        client.close()


def list_calls(client: mcpsync.Client, method: str) -> int:
    result = client.call_tool("stats")
    assert isinstance(result.structured_content, dict)
    return int(result.structured_content["listCalls"].get(method, 0))


# --------------------------------------------------------------------------- the probe


def _assert_one_probe_then_handshake(transport: RecordingStdio) -> None:
    sent = transport.sent()
    assert [m.get("method") for m in sent[:3]] == ["server/discover", "initialize", "notifications/initialized"]
    assert len(transport.sent("server/discover")) == 1
    # The probe was answered (not timed out): one round trip, and initialize carries no _meta.
    answers = [m for d, m in transport.log if d == "in" and m.get("id") == sent[0]["id"]]
    assert len(answers) == 1 and answers[0]["error"]["code"] == -32601
    assert "_meta" not in sent[1]["params"]


def test_probe_costs_one_round_trip_on_legacy_only_sdk_server(connect: Factory, sdk_server: list[str]) -> None:
    client, transport = connect([*sdk_server, "--legacy-only"])
    assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
    assert client.call_tool("echo", {"text": "fell back"}).text == "fell back"
    _assert_one_probe_then_handshake(transport)


def test_probe_costs_one_round_trip_on_server_everything(connect: Factory, everything_server: list[str]) -> None:
    client, transport = connect(everything_server)
    assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
    assert client.call_tool("echo", {"message": "fell back"}).text == "Echo: fell back"
    _assert_one_probe_then_handshake(transport)


def test_legacy_mode_sends_no_probe(connect: Factory, sdk_server: list[str]) -> None:
    client, transport = connect(sdk_server, mode="legacy")
    assert client.era == "legacy"
    assert transport.sent()[0]["method"] == "initialize"
    assert not transport.sent("server/discover")


def test_pinned_modern_version_refuses_a_legacy_only_server(
    connect: Factory, sdk_server: list[str]
) -> None:
    with pytest.raises(mcpsync.UnsupportedProtocolVersion):
        connect([*sdk_server, "--legacy-only"], mode=MODERN)


def test_pinned_modern_version_on_a_dual_era_server(connect: Factory, sdk_server: list[str]) -> None:
    client, transport = connect(sdk_server, mode=MODERN)
    assert (client.era, client.protocol_version) == ("modern", MODERN)
    assert client.call_tool("echo", {"text": "pinned"}).text == "pinned"
    assert not transport.sent("initialize")


def test_unsupported_version_is_retried_once_with_the_servers_choice(
    connect: Factory, sdk_server: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A client from the future: it tries a revision the SDK does not know first.
    monkeypatch.setattr(_options, "MODERN_VERSIONS", ("2099-01-01", MODERN))
    client, transport = connect(sdk_server)
    assert (client.era, client.protocol_version) == ("modern", MODERN)
    first, second = transport.sent("server/discover")
    assert first["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2099-01-01"
    assert second["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN
    (refusal,) = [m for d, m in transport.log if d == "in" and m.get("id") == first["id"]]
    assert refusal["error"]["code"] == -32022
    assert refusal["error"]["data"]["supported"] == [MODERN]
    assert not transport.sent("initialize")
    assert client.call_tool("echo", {"text": "after retry"}).text == "after retry"


# --------------------------------------------------------------------------- subscriptions/listen


def test_listen_stream_on_the_sdk_server(connect: Factory, sdk_server: list[str]) -> None:
    client, transport = connect(sdk_server)
    assert client.era == "modern"
    with client.listen(tools=True, resource_uris=["memo://note/1"]) as sub:
        assert sub.acknowledged == {"toolsListChanged": True, "resourceSubscriptions": ["memo://note/1"]}
        client.call_tool("add_tool", {"name": "listened"})
        client.call_tool("touch", {"uri": "memo://note/2"})  # not subscribed: never delivered
        client.call_tool("touch", {"uri": "memo://note/1"})
        first, second = sub.get(timeout=10), sub.get(timeout=10)
        assert first is not None and first.method == "notifications/tools/list_changed"
        assert first.params["_meta"][SUB_ID] == sub.id
        assert second is not None and second.uri == "memo://note/1"
        listen_id = sub.id
    # Leaving the block cancels the stream (stdio: notifications/cancelled).
    cancels = transport.sent("notifications/cancelled")
    assert [c["params"]["requestId"] for c in cancels] == [listen_id]
    assert sub.closed and sub.get(timeout=0) is None
    # The connection lives on, and a new stream works.
    with client.listen(prompts=True) as again:
        assert again.acknowledged == {"promptsListChanged": True}
    assert not transport.sent("resources/subscribe")


def test_on_and_subscribe_resource_map_onto_listen(
    connect: Factory, sdk_server: list[str], recorder: Any
) -> None:
    client, transport = connect(sdk_server)
    changed, updated = recorder(), recorder()
    client.on("notifications/tools/list_changed", changed)
    client.on("notifications/resources/updated", updated)
    client.subscribe_resource("memo://note/4")
    client.call_tool("add_tool", {"name": "via-on"})
    client.call_tool("touch", {"uri": "memo://note/4"})
    assert len(changed.wait(1)) == 1
    assert [p["uri"] for p in updated.wait(1)] == ["memo://note/4"]
    listens = transport.sent("subscriptions/listen")
    assert listens[-1]["params"]["notifications"] == {
        "toolsListChanged": True,
        "resourceSubscriptions": ["memo://note/4"],
    }
    assert not transport.sent("resources/subscribe")


def test_server_without_listen_still_answers_calls(connect: Factory, sdk_server: list[str]) -> None:
    client, _ = connect([*sdk_server, "--no-listen"])
    caps = client.server_capabilities
    assert caps.tools is not None and not caps.tools.list_changed
    # Notifications are best effort: the listen request fails, calls do not.
    client.on("notifications/tools/list_changed", lambda params: None)
    assert client.call_tool("echo", {"text": "no listen"}).text == "no listen"
    with pytest.raises(mcpsync.MethodNotFound):
        client.listen(tools=True)


# --------------------------------------------------------------------------- cache hints


def test_cache_hints_honoured_bypassed_and_invalidated(
    connect: Factory, sdk_server: list[str], recorder: Any
) -> None:
    client, _ = connect([*sdk_server, "--ttl-ms", "600000"])
    pages = -(-len(sdk_catalog.TOOLS) // 3)
    first = client.list_tools()
    assert list_calls(client, "tools/list") == pages
    assert client.list_tools() == first  # fresh for ten minutes: from the cache
    assert list_calls(client, "tools/list") == pages
    client.list_tools(cache=False)
    assert list_calls(client, "tools/list") == 2 * pages
    # resources/read and the other lists are cached too.
    client.read_resource("memo://note/1")
    client.read_resource("memo://note/1")
    client.list_prompts()
    client.list_prompts()
    assert list_calls(client, "prompts/list") == 2  # five prompts, two pages, fetched once

    # tools/list_changed (on the background listen stream) drops the cached list.
    changed = recorder()
    client.on("notifications/tools/list_changed", changed)
    client.call_tool("add_tool", {"name": "fresh"})
    changed.wait(1)
    tools = client.list_tools()
    assert tools[-1].name == "fresh"
    assert list_calls(client, "tools/list") == 2 * pages + -(-(len(sdk_catalog.TOOLS) + 1) // 3)


def test_zero_ttl_is_never_cached(connect: Factory, sdk_server: list[str]) -> None:
    client, _ = connect(sdk_server)
    client.list_prompts()
    client.list_prompts()
    assert list_calls(client, "prompts/list") == 4
    assert client.request("prompts/list")["ttlMs"] == 0


def test_legacy_results_are_never_cached(connect: Factory, sdk_server: list[str]) -> None:
    client, _ = connect([*sdk_server, "--ttl-ms", "600000"], mode="legacy")
    client.list_prompts()
    client.list_prompts()
    assert list_calls(client, "prompts/list") == 4


# --------------------------------------------------------------------------- MRTR


def test_mrtr_rounds_on_the_wire(connect: Factory, sdk_server: list[str], tmp_path: Any) -> None:
    # One tool call = two tools/call requests: input_required, then the retry with the answer.
    client, transport = connect(sdk_server, roots=[tmp_path])
    assert client.call_tool("list_roots").text == tmp_path.resolve().as_uri()
    first, retry = transport.sent("tools/call")[-2:]
    assert "inputResponses" not in first["params"]
    assert retry["params"]["inputResponses"]["roots"]["roots"][0]["uri"] == tmp_path.resolve().as_uri()
    assert retry["id"] != first["id"]
    assert not [m for d, m in transport.log if d == "in" and m.get("method") == "roots/list"]
