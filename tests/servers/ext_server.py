"""An official-SDK (``mcp`` 2.3.0) server with a user-defined extension, ``com.example/audit``.

The extension (SEP-2133) shows what a third-party extension looks like on the wire: the
server declares it with settings (``{"version": 2}``), and when a request's client
capabilities declare it too, tool results carry an audit record in ``_meta`` and a
top-level ``auditTicket`` field.  The ``capabilities`` tool returns the client
capabilities the server saw on that request.  stdio; dual-era (the first request
decides).
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolRequestParams, CallToolResult

AUDIT = "com.example/audit"


def _declared(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | None:
    caps = ctx.session.client_capabilities
    extensions = caps.extensions if caps is not None else None
    return extensions.get(AUDIT) if extensions else None


class Audit(Extension):
    identifier = AUDIT

    def settings(self) -> dict[str, Any]:
        return {"version": 2}

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        settings = _declared(ctx)
        if settings is None or not isinstance(result, CallToolResult):
            return result
        data = result.model_dump(by_alias=True, exclude_none=True)
        data["_meta"] = {**(data.get("_meta") or {}), AUDIT: {"ticket": "T-1", "level": settings.get("level", "basic")}}
        data["auditTicket"] = "T-1"
        return data


mcp = MCPServer("ext-test-server", extensions=[Audit()])


@mcp.tool()
def capabilities(ctx: Context) -> dict[str, Any]:
    """The client capabilities this request declared (wire form)."""
    caps = ctx.client_capabilities
    return caps.model_dump(by_alias=True, exclude_none=True) if caps is not None else {}


@mcp.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


if __name__ == "__main__":
    mcp.run(transport="stdio")
