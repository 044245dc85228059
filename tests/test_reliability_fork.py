"""Fork safety (RELIABILITY E4): a client used before ``os.fork()``.

* HTTP: the child's first call opens its own connection (a new ``initialize`` and session id)
  within 2 s; the parent keeps its session and works after the child exits (redis-py pattern).
* stdio, forking while other threads of the parent are busy calling (locks may be held at the
  moment of the fork): every child either works through its own server or raises
  :class:`~mcpsync.ForkedClientError` in time; none deadlocks; the parent is unaffected.
  (Plain-transport children get ``ForkedClientError``: ``tests/test_client.py``.)

Children report through their exit code and are bounded by ``signal.alarm``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request, handshake

import mcpsync

REL_SERVER = Path(__file__).resolve().parent / "servers" / "rel_server.py"


def wait_child(pid: int, timeout: float = 15.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"forked child {pid} hung")


def run_child(body: Any, alarm: int = 5) -> None:
    """In the child: run ``body()`` under an alarm; exit 0 on success, 1 on failure. Never returns."""
    code = 1
    try:
        signal.alarm(alarm)
        code = 0 if body() else 1
    except BaseException:  # noqa: BLE001 - the exit code is the report
        code = 1
    finally:
        os._exit(code)


@pytest.mark.timeout(60)
def test_http_child_opens_its_own_session_parent_keeps_its_own() -> None:
    sessions: list[str] = []
    seen: list[tuple[str | None, str]] = []

    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "initialize":
            sessions.append(f"s{len(sessions) + 1}")
            if handshake(request, conn, session=sessions[-1]):
                return
        if handshake(request, conn, session=None):
            return
        seen.append((request.headers.get("mcp-session-id"), request.rpc_method or ""))
        text = request.body["params"]["arguments"]["text"]
        conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {"content": [{"type": "text", "text": text}]}})

    with FaultServer(handler) as server:
        client = mcpsync.Client.http(server.url + "/mcp", transport="streamable-http", listen=False, timeout=5)
        try:
            assert client.call_tool("echo", {"text": "parent-before"}).text == "parent-before"
            pid = os.fork()
            if pid == 0:

                def child() -> bool:
                    start = time.monotonic()
                    ok = client.call_tool("echo", {"text": "child"}, timeout=2).text == "child"
                    client.close()
                    return ok and time.monotonic() - start < 2.0

                run_child(child)
            assert wait_child(pid) == 0
            assert client.call_tool("echo", {"text": "parent-after"}).text == "parent-after"
        finally:
            client.close()
    assert sessions == ["s1", "s2"]
    by_text = {method: sid for sid, method in seen}
    assert ("s1", "tools/call") in seen and ("s2", "tools/call") in seen
    assert seen[-1] == ("s1", "tools/call"), by_text  # the parent still uses its own session


@pytest.mark.timeout(400)
def test_stdio_fork_while_other_threads_call_never_deadlocks_the_child() -> None:
    client = mcpsync.Client.stdio([sys.executable, str(REL_SERVER)], mode="legacy", timeout=10)
    stop = threading.Event()
    errors: list[BaseException] = []

    def hammer(n: int) -> None:
        i = 0
        while not stop.is_set():
            try:
                text = f"h{n}-{i}"
                assert client.call_tool("echo", {"text": text}).text == text
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                return
            i += 1

    try:
        parent_server = client.call_tool("pid").text
        threads = [threading.Thread(target=hammer, args=(n,), daemon=True) for n in range(6)]
        for t in threads:
            t.start()
        outcomes = []
        for _ in range(15):
            pid = os.fork()
            if pid == 0:

                def child() -> bool:
                    try:
                        # Generous: the child starts a server of its own, slow on a loaded
                        # machine; a deadlock still ends in the alarm, never in a pass.
                        own = client.call_tool("pid", timeout=10).text
                    except mcpsync.ForkedClientError:
                        return True
                    client.close()
                    return own != parent_server

                run_child(child, alarm=15)
            outcomes.append(wait_child(pid, timeout=20))
        stop.set()
        for t in threads:
            t.join(10)
        assert outcomes == [0] * 15
        assert errors == []
        assert client.call_tool("pid").text == parent_server
    finally:
        stop.set()
        client.close()
