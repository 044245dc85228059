"""OpenTelemetry spans for MCP requests, and the trace context in ``_meta``.

When ``opentelemetry-api`` is installed, each request the client sends is a
CLIENT span named as the OpenTelemetry semantic conventions for MCP say
(``"{mcp.method.name} {target}"``, the target being the tool or prompt name),
with their attributes: ``mcp.method.name``, ``gen_ai.tool.name`` and
``gen_ai.operation.name = "execute_tool"`` for ``tools/call``,
``gen_ai.prompt.name``, ``mcp.resource.uri``, ``mcp.protocol.version``,
``mcp.session.id``, ``jsonrpc.request.id``, ``network.transport``,
``server.address``/``server.port`` and, on failure, ``error.type`` (and
``rpc.response.status_code`` for a JSON-RPC error; ``"tool_error"`` for a
tool result with ``isError``).

The span's context goes into the request's ``params._meta`` as W3C
``traceparent``, ``tracestate`` and ``baggage`` (SEP-414), through the
globally configured propagator, so a server that extracts them continues the
trace.  An entry already there (set by an interceptor) is kept.

Nothing is imported until a request is sent while ``opentelemetry.trace`` is
already imported (configuring a tracer provider imports it) or
``OTEL_PYTHON_TRACER_PROVIDER`` is set, and nothing is done when the package is
missing or ``Client(..., tracing=False)``.
"""

from __future__ import annotations

import functools
import os
import sys
from types import TracebackType
from typing import Any

from mcpsync.exceptions import ServerError
from mcpsync.types.modern import PROTOCOL_VERSION_KEY

__all__ = ["Tracing", "RequestSpan"]

_PROPAGATED = ("traceparent", "tracestate", "baggage")
_TARGET_KEY = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_URI_METHODS = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})


@functools.lru_cache(maxsize=1)
def _opentelemetry() -> tuple[Any, Any] | None:
    """``(opentelemetry.trace, opentelemetry.propagate)``, imported once; ``None``: not installed."""
    try:
        from opentelemetry import propagate, trace
    except ImportError:
        return None
    return trace, propagate


class Tracing:
    """Finds ``opentelemetry`` once, lazily; hands out a span per request."""

    def __init__(self, enabled: bool) -> None:
        #: Whether opentelemetry was looked for (then the cost of importing it is paid).
        self._looked = False
        #: Switched off, or opentelemetry is not installed: nothing to do, ever.
        self.off = not enabled
        # A provider named in the environment is loaded by opentelemetry on first use.
        self._from_environment = enabled and "OTEL_PYTHON_TRACER_PROVIDER" in os.environ

    def span(self, method: str, params: dict[str, Any] | None, conn: Any) -> RequestSpan | None:
        """A span for one request about to be sent on *conn*, or ``None`` when tracing is off.

        *conn* (a :class:`~mcpsync.client.policies.Channel`) is read only for a real span:
        its protocol version and its transport's URL, session id and kind are recorded.
        The caller checks :attr:`off` first; this runs on every request, so the usual
        answer (opentelemetry not imported) comes before anything else.
        """
        if not self._looked:
            if "opentelemetry.trace" not in sys.modules and not self._from_environment:
                # Configuring a tracer provider imports opentelemetry.trace; until someone
                # did, spans would be no-ops: skip importing it (~25 ms of a cold start).
                return None
            self._looked = True
        api = _opentelemetry()
        if api is None:
            self.off = True
            return None
        trace = api[0]
        if isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
            return None  # the API alone, no SDK configured: spans would be no-ops, skip the cost
        # During the probe the version is only in the per-request _meta being tried.
        version = conn.protocol_version or (conn.session.default_meta or {}).get(PROTOCOL_VERSION_KEY)
        attributes = _attributes(method, params, version if isinstance(version, str) else None, conn.transport)
        return RequestSpan(api, attributes, method, params)


class RequestSpan:
    """One request's CLIENT span; a context manager that ends it (recording a failure)."""

    def __init__(self, api: tuple[Any, Any], attributes: dict[str, Any], method: str,
                 params: dict[str, Any] | None) -> None:
        trace, self._propagate = api
        from mcpsync._version import __version__

        self._trace = trace
        target = (params or {}).get("name") if method in _TARGET_KEY else None
        name = f"{method} {target}" if isinstance(target, str) and target else method
        tracer = trace.get_tracer("mcpsync", __version__)
        self._span = tracer.start_span(name, kind=trace.SpanKind.CLIENT, attributes=attributes)
        self._scope: Any = None

    def __enter__(self) -> RequestSpan:
        # Failures are recorded by _failed, without the exception's text.
        self._scope = self._trace.use_span(self._span, end_on_exit=False, record_exception=False,
                                           set_status_on_exception=False)
        self._scope.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if exc is not None:
                self._failed(exc)
        finally:
            self._scope.__exit__(exc_type, exc, tb)
            self._span.end()

    def inject(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """*params* with the current trace context added to ``_meta`` (a copy when it changes)."""
        carrier: dict[str, str] = {}
        self._propagate.inject(carrier)
        found = {key: carrier[key] for key in _PROPAGATED if key in carrier}
        if not found:
            return params
        body = dict(params or {})
        meta = dict(body.get("_meta") or {})
        for key, value in found.items():
            meta.setdefault(key, value)
        body["_meta"] = meta
        return body

    def sent(self, request_id: int) -> None:
        """Record the JSON-RPC id the request went out with."""
        self._span.set_attribute("jsonrpc.request.id", str(request_id))

    def result(self, raw: dict[str, Any]) -> None:
        """Record what the result says about the outcome (a tool's ``isError``)."""
        if raw.get("isError") is True:
            self._span.set_attribute("error.type", "tool_error")
            self._span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, "tool returned isError"))

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, ServerError):
            self._span.set_attribute("rpc.response.status_code", str(exc.code))
            error_type = str(exc.code)
        else:
            error_type = f"{type(exc).__module__}.{type(exc).__qualname__}"
        self._span.set_attribute("error.type", error_type)
        # The class name only: exception text may carry server data we do not export.
        self._span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, type(exc).__name__))


def _attributes(method: str, params: dict[str, Any] | None, version: str | None, transport: object) -> dict[str, Any]:
    attributes: dict[str, Any] = {"mcp.method.name": method}
    body = params or {}
    target_key = _TARGET_KEY.get(method)
    if target_key is not None and isinstance(body.get("name"), str):
        attributes[target_key] = body["name"]
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
    if method in _URI_METHODS and isinstance(body.get("uri"), str):
        attributes["mcp.resource.uri"] = body["uri"]
    if version:
        attributes["mcp.protocol.version"] = version
    # transport="auto" wraps the transport in use (Streamable HTTP or legacy SSE).
    session_id = getattr(getattr(transport, "active", transport), "session_id", None)
    if isinstance(session_id, str):
        attributes["mcp.session.id"] = session_id
    url = getattr(transport, "url", None)
    if isinstance(url, str):
        from urllib.parse import urlsplit  # HTTP transports import it anyway; stdio never needs it

        parts = urlsplit(url)
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "websocket" if parts.scheme in ("ws", "wss") else "http"
        if parts.hostname:
            attributes["server.address"] = parts.hostname
        try:
            port = parts.port
        except ValueError:
            port = None
        if port is not None:
            attributes["server.port"] = port
    elif "stdio" in type(transport).__name__.lower():
        attributes["network.transport"] = "pipe"
    return attributes
