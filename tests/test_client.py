"""Client behaviour against the in-process FakeServer (a real MCP server engine)."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Mapping

import pytest

import mcpsync
from mcpsync import types
from mcpsync.testing import FakeServer, ToolContext
from mcpsync.transports.base import CloseHandler, MessageHandler, Transport
from mcpsync.transports.memory import create_pair

from schema_util import validate_against


class Recording(Transport):
    """Wraps a transport and keeps every message the client sends."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.sent: list[dict[str, Any]] = []

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        self.inner.start(on_message, on_close)

    def send(self, message: Mapping[str, Any], deadline: Any = None) -> None:
        self.sent.append(dict(message))
        self.inner.send(message, deadline)

    def close(self) -> None:
        self.inner.close()


def make_server(**kwargs: Any) -> FakeServer:
    # These tests pin down handshake-era behaviour; tests/test_modern*.py cover the other era.
    kwargs.setdefault("era", "legacy")
    server = FakeServer("test-server", "9.9", instructions="be nice", **kwargs)

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    def count(n: int) -> dict[str, Any]:
        return {"n": n}

    @server.tool()
    def boom() -> str:
        raise RuntimeError("tool broke")

    @server.tool()
    def slow(steps: int, ctx: ToolContext) -> str:
        for i in range(steps):
            ctx.report_progress(i + 1, steps, f"step {i + 1}")
        return "done"

    @server.tool()
    def ask(ctx: ToolContext) -> str:
        sampled = ctx.sample("hello?", max_tokens=5)
        elicited = ctx.elicit("name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        roots = ctx.list_roots()
        return f"{sampled['content']['text']}|{elicited.get('content')}|{[r['uri'] for r in roots]}"

    @server.tool()
    def shout(ctx: ToolContext) -> str:
        ctx.log("warning", {"msg": "careful"}, logger="t")
        return "ok"

    @server.resource("demo://a", name="a")
    def res_a() -> str:
        return "A"

    @server.resource_template("demo://item/{id}")
    def item(id: str) -> str:
        return f"item {id}"

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello {name}"

    return server


@pytest.fixture
def server() -> FakeServer:
    return make_server(page_size=2)


def test_dual_era_fake_server_is_modern_in_auto_mode() -> None:
    with make_server(era="dual").client() as client:
        assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"


def test_handshake_and_server_info(server: FakeServer) -> None:
    with server.client() as client:
        assert client.server_info.name == "test-server"
        assert client.server_info.version == "9.9"
        assert client.protocol_version == "2025-11-25"
        assert client.instructions == "be nice"
        assert client.server_capabilities.tools is not None


def test_tools_paginated_and_called(server: FakeServer) -> None:
    with server.client() as client:
        names = [t.name for t in client.list_tools()]
        assert names == ["add", "count", "boom", "slow", "ask", "shout"]
        assert client.call_tool("add", {"a": 2, "b": 40}).text == "42"
        assert client.call_tool("count", {"n": 3}).structured_content == {"n": 3}
        failed = client.call_tool("boom")
        assert failed.is_error
        with pytest.raises(mcpsync.ToolError):
            failed.raise_for_error()


def test_resources_templates_prompts(server: FakeServer) -> None:
    with server.client() as client:
        assert [r.uri for r in client.list_resources()] == ["demo://a"]
        assert [t.uri_template for t in client.list_resource_templates()] == ["demo://item/{id}"]
        contents = client.read_resource("demo://item/7").contents
        assert contents[0].text == "item 7"
        with pytest.raises(mcpsync.ServerError):
            client.read_resource("demo://missing")
        prompt = client.get_prompt("greet", {"name": "Ann"})
        assert prompt.messages[0].content.text == "Hello Ann"


def test_progress_callbacks_run_on_dispatcher_in_order(server: FakeServer) -> None:
    seen: list[tuple[float, float | None, str | None, str]] = []
    all_seen = threading.Event()

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message, threading.current_thread().name))
        if len(seen) == 5:
            all_seen.set()

    with server.client() as client:
        assert client.call_tool("slow", {"steps": 5}, progress=on_progress).text == "done"
        # Progress callbacks run on the dispatcher and may finish after the call returns.
        assert all_seen.wait(5)
    assert [s[0] for s in seen] == [1, 2, 3, 4, 5]
    assert seen[0][1] == 5 and seen[0][2] == "step 1"
    assert all(s[3].startswith("mcpsync-dispatch") for s in seen)


def test_server_requests_use_handlers_on_worker_threads(server: FakeServer, tmp_path: Any) -> None:
    threads: list[str] = []

    def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        threads.append(threading.current_thread().name)
        assert params.max_tokens == 5
        return types.CreateMessageResult(role="assistant", content=types.TextContent("yes"), model="m")

    def elicit(params: Any) -> types.ElicitResult:
        threads.append(threading.current_thread().name)
        assert isinstance(params, types.ElicitRequestFormParams)
        return types.ElicitResult(action="accept", content={"name": "Bo"})

    with server.client(
        sampling_handler=sampling, elicitation_handler=elicit, roots=[tmp_path, ("file:///x", "x")]
    ) as client:
        text = client.call_tool("ask").text
    assert text == f"yes|{{'name': 'Bo'}}|['{tmp_path.resolve().as_uri()}', 'file:///x']"
    assert threads and all(name.startswith("mcpsync-handler") for name in threads)


def test_handler_failure_reaches_exception_handler_and_server(server: FakeServer) -> None:
    errors: list[BaseException] = []

    def sampling(params: Any) -> Any:
        raise ValueError("secret-ish detail")

    with server.client(sampling_handler=sampling, exception_handler=errors.append, roots=[]) as client:
        try:
            text = client.call_tool("ask").text
        except mcpsync.ServerError as exc:  # FakeServer relays the client's error as an RPC error
            text = str(exc)
    assert "client handler failed (ValueError)" in text
    assert "secret-ish" not in text  # the server only learns that the handler failed
    assert len(errors) == 1 and isinstance(errors[0], ValueError)


def test_missing_capability_raises_before_sending() -> None:
    bare = FakeServer("bare", capabilities={"tools": {}, "resources": {}})
    transport = Recording(bare.transport())
    with mcpsync.Client(transport) as client:
        before = len(transport.sent)
        with pytest.raises(mcpsync.CapabilityNotSupported):
            client.subscribe_resource("demo://a")
        with pytest.raises(mcpsync.CapabilityNotSupported):
            client.complete(types.PromptReference("greet"), "name", "A")
        assert len(transport.sent) == before


def test_call_tool_without_the_tools_capability_raises_before_sending() -> None:
    # Both paths: the lazy connect (general path), then an open connection (the direct one).
    bare = FakeServer("bare", capabilities={"resources": {}})
    transport = Recording(bare.transport())
    with mcpsync.Client(transport) as client:
        with pytest.raises(mcpsync.CapabilityNotSupported):
            client.call_tool("echo", {"text": "x"})
        before = len(transport.sent)
        with pytest.raises(mcpsync.CapabilityNotSupported):
            client.call_tool("echo", {"text": "x"})
        assert len(transport.sent) == before


def test_logging_and_notification_callbacks_may_call_client(server: FakeServer) -> None:
    logs: list[types.LoggingMessageNotificationParams] = []
    got: list[str] = []
    done = threading.Event()
    with server.client(logging_handler=logs.append) as client:

        def on_changed(params: dict[str, Any]) -> None:
            # Re-entrant call from the dispatcher thread must not deadlock.
            got.extend(t.name for t in client.list_tools())
            done.set()

        handle = client.on("notifications/tools/list_changed", on_changed)
        client.call_tool("shout")
        server.notify_tools_changed()
        assert done.wait(5)
        handle.remove()
    assert logs and logs[0].level == "warning" and logs[0].data == {"msg": "careful"}
    assert "add" in got


def test_output_schema_mismatch_is_a_protocol_error() -> None:
    server = FakeServer("liar")

    @server.tool(output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    def lie() -> dict[str, Any]:
        return {"n": "not a number"}

    with server.client() as client:
        client.list_tools()
        with pytest.raises(mcpsync.ProtocolError, match="outputSchema"):
            client.call_tool("lie")


def test_pinned_mode_offers_only_that_version(server: FakeServer) -> None:
    transport = Recording(server.transport())
    with mcpsync.Client(transport, mode="2025-03-26") as client:
        assert client.protocol_version == "2025-03-26"
    assert transport.sent[0]["params"]["protocolVersion"] == "2025-03-26"
    with pytest.raises(ValueError):
        mcpsync.Client(server.transport(), mode="1999-01-01")


def test_unsupported_version_chosen_by_server_is_refused() -> None:
    client_end, server_end = create_pair()
    seen_initialized = threading.Event()

    def on_message(message: Any) -> None:
        if message.get("method") == "initialize":
            server_end.send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2099-01-01", "capabilities": {},
                "serverInfo": {"name": "future", "version": "1"}}})
        elif message.get("method") == "notifications/initialized":
            seen_initialized.set()

    server_end.start(on_message, lambda exc: None)
    client = mcpsync.Client(client_end)
    with pytest.raises(mcpsync.UnsupportedProtocolVersion):
        client.connect()
    client.close()
    server_end.close()
    assert not seen_initialized.is_set()


def test_outgoing_messages_validate_against_the_negotiated_schema(server: FakeServer) -> None:
    for version in ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"):
        transport = Recording(server.transport())
        with mcpsync.Client(transport, mode=version, roots=["/tmp"],
                            sampling_handler=lambda p: types.CreateMessageResult(
                                role="assistant", content=types.TextContent("y"), model="m"),
                            elicitation_handler=lambda p: types.ElicitResult(action="decline")) as client:
            client.list_tools()
            client.call_tool("add", {"a": 1, "b": 2}, progress=lambda *a: None)
            client.call_tool("ask")
            client.read_resource("demo://a")
            client.get_prompt("greet", {"name": "x"})
            client.ping()
            client.notify_roots_changed()
        assert len(transport.sent) > 8
        for message in transport.sent:
            if "method" in message and "id" in message:
                validate_against(version, "JSONRPCRequest", message)
                validate_against(version, "ClientRequest", message)
            elif "method" in message:
                validate_against(version, "ClientNotification", message)
            elif "result" in message:
                validate_against(version, "ClientResult", message["result"])


def test_close_is_idempotent_and_fails_later_calls(server: FakeServer) -> None:
    client = server.client()
    client.ping()
    client.close()
    client.close()
    assert client.closed
    with pytest.raises(mcpsync.ClientClosed):
        client.list_tools()


def test_concurrent_calls_from_many_threads(server: FakeServer) -> None:
    errors: list[BaseException] = []
    with server.client() as client:

        def worker(k: int) -> None:
            try:
                for i in range(50):
                    assert client.call_tool("add", {"a": k, "b": i}).text == str(k + i)
            except BaseException as exc:  # collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.timeout(30)
def test_fork_child_with_plain_transport_gets_clear_error(server: FakeServer) -> None:
    with server.client() as client:
        client.ping()
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: report which exception the client raised, then exit at once
            try:
                client.ping()
                outcome = b"no error"
            except mcpsync.ForkedClientError:
                outcome = b"ForkedClientError"
            except BaseException as exc:
                outcome = type(exc).__name__.encode()
            os.write(write_fd, outcome)
            os._exit(0)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as reader:
            outcome = reader.read()
        os.waitpid(pid, 0)
        assert outcome == b"ForkedClientError"
        client.ping()  # the parent is unaffected


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.timeout(60)
def test_fork_child_of_stdio_client_gets_its_own_server() -> None:
    with mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"]) as client:
        parent_pid = client._conn.transport.pid  # type: ignore[union-attr,attr-defined]
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                text = client.call_tool("add", {"a": 2, "b": 3}).text
                child_server = client._conn.transport.pid  # type: ignore[union-attr,attr-defined]
                client.close()
                outcome = f"{text}:{child_server != parent_pid}".encode()
            except BaseException as exc:
                outcome = repr(exc).encode()
            os.write(write_fd, outcome)
            os._exit(0)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as reader:
            outcome = reader.read()
        os.waitpid(pid, 0)
        assert outcome == b"5:True"
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"


@pytest.mark.timeout(20)
def test_close_from_another_thread_interrupts_a_hanging_handshake() -> None:
    client_end, server_end = create_pair()
    handshake_sent = threading.Event()

    def never_answer(message: Any) -> None:
        if message.get("method") in ("initialize", "server/discover"):
            handshake_sent.set()

    server_end.start(never_answer, lambda exc: None)
    client = mcpsync.Client(client_end, timeout=60)
    outcome: list[BaseException] = []

    def connect() -> None:
        try:
            client.connect()
        except BaseException as exc:  # asserted below
            outcome.append(exc)

    thread = threading.Thread(target=connect)
    thread.start()
    assert handshake_sent.wait(5)  # the handshake is in flight
    client.close()
    thread.join(5)
    server_end.close()
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], mcpsync.ClientClosed)
