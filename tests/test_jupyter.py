"""Jupyter (issue 25): interrupting a cell blocked in ``call_tool`` cancels the call.

A real IPython kernel (ipykernel), driven by jupyter_client as a notebook front end drives
it: one cell opens a client on the official SDK's stdio server, the next blocks in a 10 s
tool call, and the kernel is interrupted (SIGINT, as the notebook's stop button does).
The cell must end with KeyboardInterrupt at once, the server must receive
``notifications/cancelled`` (its ``slow`` tool counts the cancellation), and the next cell
must work on the same client.  The kernel is shut down whatever happens.
"""

from __future__ import annotations

import ast
import queue
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="the kernel is interrupted with SIGINT"),
    pytest.mark.timeout(120),
]

#: Bound on one cell that should finish at once (the kernel's first import included).
CELL = 30.0


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[tuple[KernelManager, BlockingKernelClient]]:
    # Over local sockets in a private directory, not TCP: nothing else can reach the kernel.
    manager = KernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "kernel"))
    manager.start_kernel()
    client = manager.client()
    try:
        client.start_channels()
        client.wait_for_ready(timeout=60)
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run(client: BlockingKernelClient, code: str, timeout: float = CELL, **expressions: str) -> dict[str, Any]:
    """Run one cell; its ``execute_reply`` content (with ``values``: *expressions* evaluated)."""
    msg_id = client.execute(code, user_expressions=expressions)
    return reply_to(client, msg_id, timeout)


def reply_to(client: BlockingKernelClient, msg_id: str, timeout: float) -> dict[str, Any]:
    while True:
        try:
            msg = client.get_shell_msg(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no reply from the kernel within {timeout} s")
        if msg["parent_header"].get("msg_id") == msg_id:
            content: dict[str, Any] = msg["content"]
            content["values"] = {
                name: ast.literal_eval(value["data"]["text/plain"])
                for name, value in content.get("user_expressions", {}).items()
                if value.get("status") == "ok"
            }
            return content


def wait_for_output(client: BlockingKernelClient, text: str, timeout: float) -> None:
    """Wait until the running cell printed *text* (so it is inside the call)."""
    while True:
        try:
            msg = client.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"the cell did not print {text!r} within {timeout} s")
        if msg["msg_type"] == "stream" and text in msg["content"]["text"]:
            return


def test_interrupting_a_cell_blocked_in_call_tool_cancels_the_call(
    kernel: tuple[KernelManager, BlockingKernelClient], sdk_server: list[str]
) -> None:
    manager, client = kernel
    opened = run(client, f"import mcpsync\nclient = mcpsync.Client.stdio({sdk_server!r}).connect()")
    assert opened["status"] == "ok", opened
    # Interrupted only once the server runs the tool (its first progress report): an interrupt
    # before the request is written cancels nothing on the server.
    blocked = client.execute(
        'client.call_tool("slow", {"steps": 100, "delay": 0.1}, progress=lambda *a: print("running", flush=True))'
    )
    wait_for_output(client, "running", CELL)
    manager.interrupt_kernel()
    interrupted = reply_to(client, blocked, 5.0)  # at once: the tool would run 10 s
    assert interrupted["status"] == "error" and interrupted["ename"] == "KeyboardInterrupt", interrupted
    counts = run(
        client,
        "import time\n"
        "for _ in range(100):\n"
        "    slow = client.call_tool('stats').structured_content['slow']\n"
        "    if slow['cancelled']: break\n"
        "    time.sleep(0.05)",
        slow="slow", pending="client._conn.session.pending_count()",
    )
    assert counts["status"] == "ok", counts
    assert counts["values"]["slow"] == {"done": 0, "cancelled": 1}
    assert counts["values"]["pending"] == 0
    after = run(client, "text = client.call_tool('echo', {'text': 'next cell'}).text\nclient.close()",
                text="text")
    assert after["status"] == "ok" and after["values"]["text"] == "next cell", after
