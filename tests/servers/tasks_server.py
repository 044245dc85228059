"""A FastMCP server with the ``io.modelcontextprotocol/tasks`` extension (fastmcp-tasks).

Run by the tests with the interpreter of the separate peer venv (``tests/peers``;
fastmcp-tasks pins packages the main test venv cannot share), over stdio, with
Docket's in-memory backend: no Redis service is needed.

Over stdio by default; ``--http PORT`` serves Streamable HTTP on 127.0.0.1 at ``/mcp``.

Tools:

* ``sleepy(seconds)``: a task when the client opts in (``optional``), else inline.
* ``must_task(seconds)``: always a task (``required``): -32021 without the opt-in.
* ``ask_name()``: a task that asks the client for a name (``tasks/update``).
* ``broken()``: a task that fails with a JSON-RPC error.
* ``oops()``: a task that completes with ``isError: true``.
* ``quick(x)``: never a task.
"""

from __future__ import annotations

from datetime import timedelta

import anyio
import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp.shared.exceptions import MCPError

mcp = FastMCP("tasks-test-server")
mcp.add_extension(TasksExtension(url="memory://"))
# Poll often: the tests wait for tasks that take a fraction of a second.
FAST = TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=100))


@mcp.tool(task=FAST)
async def sleepy(seconds: float = 0.0) -> str:
    """Sleep, then say so."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=100)))
async def must_task(seconds: float = 0.0) -> str:
    """Only runs as a task."""
    await anyio.sleep(seconds)
    return f"tasked {seconds}"


@mcp.tool(task=FAST)
async def ask_name(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Ask for a name through the client (the guard pattern), then greet."""
    answers = ctx.input_responses
    if not answers or "name" not in answers:
        return mcp_types.InputRequiredResult(
            input_requests={
                "name": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message="Your name?",
                        requested_schema={
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        },
                    )
                )
            }
        )
    answer = answers["name"]
    content = getattr(answer, "content", None) or {}
    return f"Hello, {content.get('name', '?')}!"


@mcp.tool(task=FAST)
async def broken() -> str:
    """Fail with a JSON-RPC error."""
    raise MCPError(code=-32603, message="the backend is on fire")


@mcp.tool(task=FAST)
async def oops() -> str:
    """Fail as a tool (isError)."""
    raise ValueError("tool-level failure")


@mcp.tool
def quick(x: int = 1) -> int:
    """Answer at once."""
    return x * 2


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        # Streamable HTTP on 127.0.0.1:PORT (several clients, one task store).
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
    else:
        mcp.run(transport="stdio", show_banner=False)
