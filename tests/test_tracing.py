"""OpenTelemetry spans and trace context in ``_meta`` (docs/policies.rst).

Spans are read with the real opentelemetry-sdk's in-memory exporter; the trace context is
checked where it matters, in what a real server received.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import baggage, context, trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mcpsync
from mcpsync import RetryPolicy
from tests.servers.http_fault import Conn, FaultServer, Request, discover_result

# A real stdio server whose tools report the _meta their request carried.
SERVER = textwrap.dedent(
    """
    import json
    from mcpsync.testing import FakeServer, ToolContext
    s = FakeServer("traced", era="{era}")

    @s.tool()
    def meta(ctx: ToolContext) -> str:
        return json.dumps(ctx.meta)

    @s.tool()
    def broken() -> str:
        raise ValueError("no")

    s.run_stdio()
    """
)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """A real SDK provider with an in-memory exporter, installed globally for one test only.

    OpenTelemetry lets a process set its global provider once; the test undoes it (through
    the API's own once-guard) so that later tests in this process run without tracing.
    """
    from opentelemetry.util._once import Once

    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider), "a provider is already set"
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    try:
        yield exporter
    finally:
        provider.shutdown()
        trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
        trace._TRACER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]


def _stdio(era: str = "dual", **options: Any) -> mcpsync.Client:
    return mcpsync.Client.stdio([sys.executable, "-c", SERVER.format(era=era)], timeout=20, **options)


def _named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def _traceparent(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    assert ctx is not None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_tool_call_is_a_client_span_whose_context_the_server_receives(
    spans: InMemorySpanExporter, era: str
) -> None:
    with _stdio(era) as client:
        received = json.loads(client.call_tool("meta", {}).text)
        version = client.protocol_version
    (span,) = _named(spans, "tools/call meta")
    assert span.kind is trace.SpanKind.CLIENT
    assert received["traceparent"] == _traceparent(span)
    attributes = dict(span.attributes or {})
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "meta"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["mcp.protocol.version"] == version
    assert attributes["network.transport"] == "pipe"
    assert attributes["jsonrpc.request.id"]
    assert "error.type" not in attributes
    first = "server/discover" if era == "modern" else "initialize"
    assert _named(spans, first), [s.name for s in spans.get_finished_spans()]


def test_the_span_is_a_child_of_the_callers_span_and_carries_baggage(spans: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer("test")
    with _stdio("legacy") as client:
        token = context.attach(baggage.set_baggage("tenant", "acme"))
        try:
            with tracer.start_as_current_span("view") as view:
                received = json.loads(client.call_tool("meta", {}).text)
        finally:
            context.detach(token)
    (span,) = _named(spans, "tools/call meta")
    assert span.parent is not None and span.parent.span_id == view.get_span_context().span_id
    assert span.context is not None and span.context.trace_id == view.get_span_context().trace_id
    assert received["traceparent"] == _traceparent(span)
    assert received["baggage"] == "tenant=acme"


def test_errors_and_tool_errors_are_recorded(spans: InMemorySpanExporter) -> None:
    with _stdio("legacy") as client:
        assert client.call_tool("broken", {}).is_error
        with pytest.raises(mcpsync.MethodNotFound):
            client.request("no/such/method")
    (tool,) = _named(spans, "tools/call broken")
    assert tool.attributes is not None and tool.attributes["error.type"] == "tool_error"
    assert tool.status.status_code is trace.StatusCode.ERROR
    (missing,) = _named(spans, "no/such/method")
    assert missing.attributes is not None
    assert missing.attributes["error.type"] == "-32601"
    assert missing.attributes["rpc.response.status_code"] == "-32601"
    assert missing.status.status_code is trace.StatusCode.ERROR
    # The class name only: exception text (server data) is not exported.
    assert missing.status.description == "MethodNotFound"
    assert not missing.events


def test_an_interceptors_traceparent_is_kept(spans: InMemorySpanExporter) -> None:
    mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    def own(request: mcpsync.OutgoingRequest, call_next: Any) -> Any:
        if request.method == "tools/call":
            request.params["_meta"] = {"traceparent": mine}
        return call_next(request)

    with _stdio("legacy", interceptors=[own]) as client:
        received = json.loads(client.call_tool("meta", {}).text)
    assert received["traceparent"] == mine


def test_tracing_false_sends_no_context_and_makes_no_span(spans: InMemorySpanExporter) -> None:
    with _stdio("legacy", tracing=False) as client:
        received = json.loads(client.call_tool("meta", {}).text)
    assert "traceparent" not in received
    assert spans.get_finished_spans() == ()


def test_http_spans_name_the_server_and_each_retry_is_a_span(spans: InMemorySpanExporter) -> None:
    received: list[dict[str, Any]] = []
    failures = [503]

    def handler(request: Request, conn: Conn) -> None:
        method = request.rpc_method
        if method == "server/discover":
            conn.respond(200, discover_result(request))
        elif method == "tools/list":
            received.append(request.body["params"]["_meta"])
            if failures:
                failures.pop()
                conn.respond(503, b"busy", ctype="text/plain")
                return
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {"tools": []}})
        else:
            conn.respond(405, b"", ctype="text/plain")

    with FaultServer(handler) as server:
        with mcpsync.Client.http(server.url + "/mcp", transport="streamable-http", timeout=10,
                                 retry=RetryPolicy(backoff=0.01)) as client:
            assert client.list_tools() == []
    attempts = _named(spans, "tools/list")
    assert len(attempts) == 2
    assert [m["traceparent"] for m in received] == [_traceparent(s) for s in attempts]
    failed, ok = attempts
    assert failed.attributes is not None and failed.attributes["error.type"] == "mcpsync.exceptions.HTTPStatusError"
    attributes = dict(ok.attributes or {})
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == server.port
    assert attributes["network.transport"] == "tcp"
    assert attributes["network.protocol.name"] == "http"
    assert attributes["mcp.protocol.version"] == "2026-07-28"
    (probe,) = _named(spans, "server/discover")
    assert dict(probe.attributes or {})["mcp.protocol.version"] == "2026-07-28"


HIDDEN = textwrap.dedent(
    """
    import sys
    {hide}
    import mcpsync
    from mcpsync.testing import FakeServer, ToolContext
    s = FakeServer("x", era="legacy")

    @s.tool()
    def meta(ctx: ToolContext) -> str:
        return ",".join(sorted(ctx.meta))

    with s.client(tracing={tracing}) as client:
        print(client.call_tool("meta", {{}}).text + "|" + str(sys.modules.get("opentelemetry") is not None))
    """
)


@pytest.mark.parametrize(
    ("hide", "tracing", "expected"),
    [
        # Not installed: nothing imported, nothing sent, calls work.
        ("sys.modules['opentelemetry'] = None", "True", "|False"),
        # Installed but switched off: not even imported.
        ("", "False", "|False"),
        # Installed, on, but nothing imported it (so no provider is configured): not imported.
        ("", "True", "|False"),
        # Imported, on, no SDK configured: the API's no-op tracer sends no context.
        ("import opentelemetry.trace", "True", "|True"),
    ],
)
def test_nothing_is_imported_or_sent_without_opentelemetry(hide: str, tracing: str, expected: str) -> None:
    code = HIDDEN.format(hide=hide, tracing=tracing)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected


def test_no_provider_is_left_behind_for_later_tests() -> None:
    # Runs after the tests above: they must not leave tracing on for the rest of the suite.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def test_a_session_id_is_recorded_over_auto_http(spans: InMemorySpanExporter) -> None:
    from tests.servers.http_fault import handshake

    def handler(request: Request, conn: Conn) -> None:
        if not handshake(request, conn, session="sess-42"):
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {}})

    with FaultServer(handler) as server:
        with mcpsync.Client.http(server.url + "/mcp", timeout=10) as client:
            client.ping()
    (ping,) = _named(spans, "ping")
    attributes = dict(ping.attributes or {})
    assert attributes["mcp.session.id"] == "sess-42"
    assert attributes["mcp.protocol.version"] == "2025-11-25"
