"""Interceptors around every request and notification (docs/policies.rst), against FakeServer."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import pytest

import mcpsync
from mcpsync import OutgoingRequest
from mcpsync.client.interceptors import CallNext
from mcpsync.testing import FakeServer


def _server(era: str = "dual") -> FakeServer:
    server = FakeServer("demo", era=era)

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.tool()
    def other() -> str:
        """Another tool."""
        return "x"

    return server


class Recorder:
    def __init__(self, name: str, log: list[tuple[str, str, str]]) -> None:
        self.name = name
        self.log = log

    def __call__(self, request: OutgoingRequest, call_next: CallNext) -> Any:
        kind = "notify" if request.is_notification else "request"
        self.log.append((self.name, "before", f"{kind} {request.method}"))
        result = call_next(request)
        self.log.append((self.name, "after", f"{kind} {request.method}"))
        return result


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_every_request_goes_through_in_order_handshake_and_probe_included(era: str) -> None:
    log: list[tuple[str, str, str]] = []
    with _server().client(mode="auto" if era == "modern" else "legacy",
                          interceptors=[Recorder("outer", log), Recorder("inner", log)]) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    methods = [entry[2] for entry in log if entry[0] == "outer" and entry[1] == "before"]
    if era == "modern":
        assert methods == ["request server/discover", "request tools/call"]
    else:
        assert methods == ["request initialize", "notify notifications/initialized", "request tools/call"]
    # Outermost first on the way in, last on the way out.
    call = [entry[:2] for entry in log if entry[2] == "request tools/call"]
    assert call == [("outer", "before"), ("inner", "before"), ("inner", "after"), ("outer", "after")]


def test_an_interceptor_may_change_params_and_add_meta() -> None:
    seen: list[dict[str, Any]] = []
    server = _server("legacy")
    def tenant(request: OutgoingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/call":
            request.params["arguments"] = {"text": request.params["arguments"]["text"].upper()}
            request.params.setdefault("_meta", {})["tenant"] = "acme"
            seen.append(request.params)
        return call_next(request)

    with server.client(interceptors=[tenant]) as client:
        assert client.call_tool("echo", {"text": "quiet"}).text == "QUIET"
    assert seen[0]["_meta"] == {"tenant": "acme"}


def test_the_server_receives_meta_an_interceptor_adds() -> None:
    # A real subprocess server that echoes the _meta it received.
    code = (
        "from mcpsync.testing import FakeServer\n"
        "from mcpsync.testing import ToolContext\n"
        "s = FakeServer('m', era='legacy')\n"
        "@s.tool()\n"
        "def meta(ctx: ToolContext) -> str:\n"
        "    return repr(sorted((ctx.meta or {}).items()))\n"
        "s.run_stdio()\n"
    )

    def add(request: OutgoingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/call":
            request.params["_meta"] = {"tenant": "acme"}
        return call_next(request)

    with mcpsync.Client.stdio([sys.executable, "-c", code], interceptors=[add], timeout=20) as client:
        assert "('tenant', 'acme')" in client.call_tool("meta", {}).text


def test_an_interceptor_can_short_circuit() -> None:
    def cached(request: OutgoingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/call" and request.params.get("name") == "echo":
            return {"content": [{"type": "text", "text": "from cache"}]}
        return call_next(request)

    with _server("legacy").client(interceptors=[cached]) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "from cache"
        assert client.call_tool("other", {}).text == "x"


def test_an_exception_an_interceptor_raises_reaches_the_caller_unchanged() -> None:
    class Denied(Exception):
        pass

    def deny(request: OutgoingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/call":
            raise Denied(request.params["name"])
        return call_next(request)

    with _server("legacy").client(interceptors=[deny]) as client:
        with pytest.raises(Denied, match="echo"):
            client.call_tool("echo", {"text": "hi"})
        client.ping()  # the client still works


def test_an_interceptor_sees_server_errors_and_may_translate_them() -> None:
    seen: list[BaseException] = []

    def watch(request: OutgoingRequest, call_next: CallNext) -> Any:
        try:
            return call_next(request)
        except mcpsync.McpError as exc:
            seen.append(exc)
            raise

    with _server("legacy").client(interceptors=[watch]) as client:
        with pytest.raises(mcpsync.MethodNotFound):
            client.request("no/such/method")
    assert isinstance(seen[0], mcpsync.MethodNotFound)


def test_a_result_that_is_not_a_dict_is_a_type_error() -> None:
    def broken(request: OutgoingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/call":
            return "oops"
        return call_next(request)

    with _server("legacy").client(interceptors=[broken]) as client:
        with pytest.raises(TypeError, match="interceptor returned str"):
            client.call_tool("echo", {"text": "x"})


def test_notifications_go_through_with_the_flag() -> None:
    seen: list[tuple[str, bool]] = []

    def watch(request: OutgoingRequest, call_next: CallNext) -> Any:
        seen.append((request.method, request.is_notification))
        result = call_next(request)
        if request.is_notification:
            assert result is None
        return result

    with _server("legacy").client(interceptors=[watch], roots=["/tmp"]) as client:
        client.notify_roots_changed()
        client.notify("notifications/custom", {"x": 1})
    assert ("notifications/roots/list_changed", True) in seen
    assert ("notifications/custom", True) in seen
    assert ("initialize", False) in seen


def test_interceptors_run_on_the_callers_thread() -> None:
    threads: list[threading.Thread] = []

    def where(request: OutgoingRequest, call_next: CallNext) -> Any:
        threads.append(threading.current_thread())
        assert request.client is client
        return call_next(request)

    client = _server("legacy").client(interceptors=[where])
    with client:
        worker = threading.Thread(target=client.ping)
        worker.start()
        worker.join(10)
    assert threads[0] is threading.main_thread()  # the handshake, on the connecting thread
    assert threads[-1] is worker


def test_an_interceptor_that_raises_during_the_handshake_fails_connect() -> None:
    class NoConnect(Exception):
        pass

    def refuse(request: OutgoingRequest, call_next: CallNext) -> Any:
        if request.method in ("initialize", "server/discover"):
            raise NoConnect("policy says no")
        return call_next(request)

    client = _server().client(interceptors=[refuse])
    with pytest.raises(NoConnect):
        client.connect()
    client.close()


def test_time_an_interceptor_spends_counts_against_the_calls_deadline() -> None:
    from mcpsync.testing import ToolContext

    server = _server("legacy")

    @server.tool()
    def stuck(ctx: ToolContext) -> str:
        """Never answers (until cancelled)."""
        ctx.cancelled.wait(30)
        return "late"

    never = threading.Event()

    def slow(request: OutgoingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/call":
            never.wait(2.0)  # a slow policy check, say
        return call_next(request)

    with server.client(interceptors=[slow]) as client:
        start = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            client.call_tool("stuck", {}, timeout=2.5)
        elapsed = time.monotonic() - start
    # 2.5 s in all, not 2 s in the interceptor plus a fresh 2.5 s for the reply.
    assert 2.0 < elapsed < 3.6


def test_using_the_client_from_a_handshake_interceptor_fails_instead_of_hanging() -> None:
    def curious(request: OutgoingRequest, call_next: CallNext) -> Any:
        if request.method == "initialize":
            request.client.list_tools()  # the connection is what is being made
        return call_next(request)

    client = _server("legacy").client(interceptors=[curious], mode="legacy")
    with pytest.raises(mcpsync.McpError, match="still connecting"):
        client.connect()
    client.close()
