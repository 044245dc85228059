"""Retries of transient failures against real HTTP servers on 127.0.0.1 (docs/policies.rst).

The servers count every request they get, so "retried" and "never retried after the request
may have run" are both proven by what reached the server, not by what the client says.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import mcpsync
from mcpsync import HTTPStatusError, RetryPolicy, ServerStartError
from mcpsync.client.retry import resolve_policy
from mcpsync.testing import FakeServer
from tests.servers.http_fault import Conn, FaultServer, Request, discover_result

FAST = RetryPolicy(attempts=4, backoff=0.01, max_backoff=0.02)

TOOLS = [
    {"name": "plain", "inputSchema": {"type": "object"}},
    {"name": "reader", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "setter", "inputSchema": {"type": "object"}, "annotations": {"idempotentHint": True}},
]


class Script:
    """A 2026-07-28 server whose answers to one method fail as scripted, then succeed."""

    def __init__(self, method: str, failures: list[tuple[int, dict[str, str]]]) -> None:
        self.method = method
        self.failures = list(failures)
        self.lock = threading.Lock()

    def __call__(self, request: Request, conn: Conn) -> None:
        method = request.rpc_method
        if method == self.method:
            with self.lock:
                failure = self.failures.pop(0) if self.failures else None
            if failure is not None:
                status, headers = failure
                conn.respond(status, b"busy", ctype="text/plain", headers=headers)
                return
        rid = request.body["id"] if isinstance(request.body, dict) else None
        if method == "server/discover":
            conn.respond(200, discover_result(request))
        elif method == "tools/list":
            conn.respond(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            conn.respond(200, {"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": "done"}]}})
        elif rid is not None:
            conn.respond(200, {"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            conn.respond(202, b"", ctype="text/plain")


@pytest.fixture
def serve() -> Iterator[Callable[..., FaultServer]]:
    servers: list[FaultServer] = []

    def start(handler: Callable[[Request, Conn], None], **kw: Any) -> FaultServer:
        server = FaultServer(handler, **kw)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _client(server: FaultServer, **options: Any) -> mcpsync.Client:
    options.setdefault("timeout", 10)
    return mcpsync.Client.http(server.url + "/mcp", transport="streamable-http", **options)


def test_503_then_success_is_retried_for_a_safe_method(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("tools/list", [(503, {}), (503, {"Retry-After": "0"})]))
    with _client(server, retry=FAST) as client:
        assert [t.name for t in client.list_tools()] == ["plain", "reader", "setter"]
    assert len(server.rpc("tools/list")) == 3


@pytest.mark.parametrize("status", [502, 504])
def test_gateway_errors_are_transient(serve: Callable[..., FaultServer], status: int) -> None:
    server = serve(Script("tools/list", [(status, {})]))
    with _client(server, retry=FAST) as client:
        client.list_tools()
    assert len(server.rpc("tools/list")) == 2


def test_429_is_retried_only_with_retry_after(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("tools/list", [(429, {"Retry-After": "0"}), (429, {})]))
    with _client(server, retry=FAST) as client:
        with pytest.raises(HTTPStatusError) as info:
            client.list_tools()
        assert info.value.status == 429
    # The first 429 (with Retry-After) was retried; the second (without) surfaced as it is.
    assert len(server.rpc("tools/list")) == 2


def test_retry_after_as_an_http_date_is_honoured(serve: Callable[..., FaultServer]) -> None:
    # RFC 9110 allows a date as well as seconds; proxies in front of servers send dates.
    from email.utils import formatdate

    soon = formatdate(time.time() + 1, usegmt=True)
    server = serve(Script("tools/list", [(429, {"Retry-After": soon})]))
    with _client(server, retry=FAST) as client:
        assert [t.name for t in client.list_tools()] == ["plain", "reader", "setter"]
    assert len(server.rpc("tools/list")) == 2


def test_a_retry_after_date_beyond_the_deadline_fails_at_once(serve: Callable[..., FaultServer]) -> None:
    from email.utils import formatdate

    later = formatdate(time.time() + 60, usegmt=True)
    server = serve(Script("tools/list", [(503, {"Retry-After": later})]))
    with _client(server, retry=RetryPolicy(attempts=3, max_retry_after=120)) as client:
        client.connect()
        with pytest.raises(HTTPStatusError) as info:
            client.list_tools(timeout=5)
        assert info.value.retry_after is not None and 50 < info.value.retry_after <= 60
    assert len(server.rpc("tools/list")) == 1


def test_a_tool_without_hints_is_never_retried_after_it_may_have_run(
    serve: Callable[..., FaultServer],
) -> None:
    server = serve(Script("tools/call", [(503, {"Retry-After": "0"})]))
    with _client(server, retry=FAST) as client:
        client.list_tools()
        with pytest.raises(HTTPStatusError) as info:
            client.call_tool("plain", {})
        assert info.value.status == 503
    assert len(server.rpc("tools/call")) == 1


def test_the_caller_may_allow_retrying_one_call(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("tools/call", [(503, {})]))
    with _client(server, retry=FAST) as client:
        assert client.call_tool("plain", {}, retry=True).text == "done"
    assert len(server.rpc("tools/call")) == 2


@pytest.mark.parametrize("tool", ["reader", "setter"])
def test_tools_with_read_only_or_idempotent_hints_are_retried(
    serve: Callable[..., FaultServer], tool: str
) -> None:
    server = serve(Script("tools/call", [(503, {}), (502, {})]))
    with _client(server, retry=FAST) as client:
        client.list_tools()  # the hints come from the cached listing
        assert client.call_tool(tool, {}).text == "done"
    assert len(server.rpc("tools/call")) == 3


def test_a_hinted_tool_with_retry_false_is_not_retried(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("tools/call", [(503, {})]))
    with _client(server, retry=FAST) as client:
        client.list_tools()
        with pytest.raises(HTTPStatusError):
            client.call_tool("reader", {}, retry=False)
    assert len(server.rpc("tools/call")) == 1


def test_retry_false_turns_retries_off(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("tools/list", [(503, {})]))
    with _client(server, retry=False) as client:
        with pytest.raises(HTTPStatusError) as info:
            client.list_tools()
        assert info.value.status == 503
    assert len(server.rpc("tools/list")) == 1


def test_a_policy_sets_the_number_of_attempts(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("tools/list", [(503, {})] * 10))
    with _client(server, retry=RetryPolicy(attempts=5, backoff=0.001)) as client:
        with pytest.raises(HTTPStatusError):
            client.list_tools()
    assert len(server.rpc("tools/list")) == 5


def test_the_probe_is_retried_like_any_safe_method(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("server/discover", [(503, {})]))
    with _client(server, retry=FAST) as client:
        assert client.era == "modern"
    assert len(server.rpc("server/discover")) == 2


def test_retries_never_sleep_past_the_deadline(serve: Callable[..., FaultServer]) -> None:
    # Every answer asks for 1 s; the call has 1.5 s: one retry fits, a second would not.
    server = serve(Script("tools/list", [(503, {"Retry-After": "1"})] * 10))
    with _client(server, retry=RetryPolicy(attempts=10)) as client:
        client.connect()
        start = time.monotonic()
        with pytest.raises(HTTPStatusError):
            client.list_tools(timeout=1.5)
        elapsed = time.monotonic() - start
    assert 0.9 < elapsed < 1.5 + 1.0
    assert len(server.rpc("tools/list")) == 2


def test_a_retry_after_beyond_the_deadline_fails_at_once(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("tools/list", [(503, {"Retry-After": "30"})]))
    with _client(server, retry=FAST) as client:
        client.connect()
        start = time.monotonic()
        with pytest.raises(HTTPStatusError):
            client.list_tools(timeout=5)
        assert time.monotonic() - start < 1.0
    assert len(server.rpc("tools/list")) == 1


def test_max_total_timeout_caps_the_retries(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("tools/list", [(503, {"Retry-After": "1"})] * 10))
    with _client(server, retry=RetryPolicy(attempts=10)) as client:
        client.connect()
        start = time.monotonic()
        with pytest.raises(HTTPStatusError):
            client.request("tools/list", timeout=None, max_total_timeout=0.5)
        assert time.monotonic() - start < 1.5
    assert len(server.rpc("tools/list")) == 1


def test_close_ends_a_backoff_wait(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("tools/list", [(503, {"Retry-After": "20"})]))
    client = _client(server, retry=RetryPolicy(attempts=3, max_retry_after=60))
    client.connect()
    failed: list[BaseException] = []
    ended = threading.Event()

    def call() -> None:
        try:
            client.list_tools(timeout=30)
        except mcpsync.McpError as exc:
            failed.append(exc)
        ended.set()

    waiting = _RetryLogged()
    with waiting:
        thread = threading.Thread(target=call)
        thread.start()
        assert waiting.event.wait(10)
    start = time.monotonic()
    client.close()
    assert ended.wait(2)
    assert time.monotonic() - start < 1.5
    thread.join(2)
    assert isinstance(failed[0], HTTPStatusError)  # the failure that was being retried


class _RetryLogged(logging.Handler):
    """Sets :attr:`event` when the client logs that it will retry (the first attempt failed)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.event = threading.Event()
        self.logger = logging.getLogger("mcpsync.client.retry")

    def emit(self, record: logging.LogRecord) -> None:
        if "; retry " in record.getMessage():
            self.event.set()

    def __enter__(self) -> _RetryLogged:
        self._level = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self._level)


def test_a_refused_connection_is_retried_until_the_server_listens(
    serve: Callable[..., FaultServer],
) -> None:
    server = serve(Script("none", []), listen=False)  # bound, not listening: connects are refused

    class ListenOnRetry(_RetryLogged):
        def emit(self, record: logging.LogRecord) -> None:
            if "; retry " in record.getMessage() and not self.event.is_set():
                self.event.set()
                server.listen()

    with ListenOnRetry() as hook, _client(server, retry=RetryPolicy(attempts=20, backoff=0.01)) as client:
        assert client.era == "modern"
    assert hook.event.is_set()
    assert len(server.rpc("server/discover")) == 1  # the refused tries never reached it


def test_a_call_that_was_never_sent_is_retried_even_without_hints(
    serve: Callable[..., FaultServer],
) -> None:
    first = serve(Script("none", []))
    client = _client(first, retry=RetryPolicy(attempts=20, backoff=0.01))
    try:
        client.connect()
        port = first.port
        first.stop()  # the port now refuses connections
        second = serve(Script("none", []), port=port, listen=False)

        class ListenOnRetry(_RetryLogged):
            def emit(self, record: logging.LogRecord) -> None:
                if "; retry " in record.getMessage() and not self.event.is_set():
                    self.event.set()
                    second.listen()

        with ListenOnRetry() as hook:
            assert client.call_tool("plain", {}).text == "done"
        assert hook.event.is_set()
        assert len(second.rpc("tools/call")) == 1
        assert not first.rpc("tools/call")
    finally:
        client.close()


def test_a_refused_port_fails_within_the_deadline() -> None:
    probe = FaultServer(Script("none", []), listen=False)
    try:
        client = mcpsync.Client.http(probe.url + "/mcp", timeout=2, retry=RetryPolicy(attempts=100, backoff=0.05))
        start = time.monotonic()
        with pytest.raises(ServerStartError):
            client.connect()
        # The probe is bounded by the timeout (2 s) and the retries by the probe's bound.
        assert time.monotonic() - start < 2 + 1.5
        client.close()
    finally:
        probe.stop()


def test_policy_arguments_are_checked() -> None:
    assert resolve_policy(False) is None
    assert resolve_policy(True) == RetryPolicy()
    custom = RetryPolicy(attempts=2)
    assert resolve_policy(custom) is custom
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
    with pytest.raises(TypeError):
        mcpsync.Client(FakeServer("x").transport(), retry="always")  # type: ignore[arg-type]


def test_interceptors_see_one_call_however_often_it_is_retried(serve: Callable[..., FaultServer]) -> None:
    server = serve(Script("tools/list", [(503, {}), (503, {})]))
    seen: list[str] = []

    def count(request: mcpsync.OutgoingRequest, call_next: Any) -> Any:
        seen.append(request.method)
        return call_next(request)

    with _client(server, retry=FAST, interceptors=[count]) as client:
        client.list_tools()
    assert seen.count("tools/list") == 1
    assert len(server.rpc("tools/list")) == 3
