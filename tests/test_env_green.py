"""mcpsync under gevent and eventlet monkey-patching, over stdio and Streamable HTTP (issue 25).

Monkey-patching must never happen in the pytest process, so each case runs
``tests/envs/green_probe.py`` as a subprocess with its own timeout and judges what it measured:
4 concurrent calls from green threads overlap, the hub is never blocked for more than 0.25 s
(a ticking greenlet's longest gap; the probe first blocks the hub on purpose to show the ticker
sees it), ``timeout=`` cuts a 5 s call at 0.5 s, ``close()`` releases a waiting call at once, and
nothing is left: no ``mcpsync-*`` thread, no child process, no stdio server (checked here too,
after the probe exited).  The servers are real: the official-SDK test server over stdio (started
by the patched probe) and over HTTP (started here, unpatched).

Also here, without patching: the ``select.poll`` fallback that eventlet needs (eventlet deletes
``select.poll``), and a ``ServerStartError`` that names its cause.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers_proc import process_state
from test_http_sdk import _start, _stop

import mcpsync
from mcpsync.exceptions import ServerStartError

TESTS = Path(__file__).resolve().parent
PROBE = TESTS / "envs" / "green_probe.py"
FAULT = [sys.executable, str(TESTS / "servers" / "fault_server.py")]
#: The longest the hub may be blocked (the issue's bound).  A library call that blocked it
#: would show a gap of a call's length (0.5 to 10 s here); the machine's own scheduling, a few ms.
HUB_BOUND = 0.25
PROBE_TIMEOUT = 120.0

pytestmark = pytest.mark.timeout(PROBE_TIMEOUT + 30)


@pytest.fixture
def http_url() -> Iterator[str]:
    proc, port = _start([sys.executable, str(TESTS / "servers" / "http_sdk.py"), "--transport", "streamable"])
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(proc)


def probe(library: str, target: str) -> dict[str, Any]:
    try:
        done = subprocess.run([sys.executable, str(PROBE), library, target], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the {library} probe hung ({PROBE_TIMEOUT:.0f} s): {exc.stderr!r}"[-4000:])
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"the {library} probe failed ({done.returncode}):\n{done.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(lines[-1][len("RESULT "):])
    return report


@pytest.mark.parametrize("library", ["gevent", "eventlet"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_monkey_patched_client(library: str, transport: str, request: pytest.FixtureRequest) -> None:
    target = "stdio" if transport == "stdio" else request.getfixturevalue("http_url")
    report = probe(library, target)
    assert report["echo"] == "warm" and report["after_timeout"] == "still here"
    # Concurrent calls from green threads overlap: each started before any ended.
    starts, ends = [c[0] for c in report["overlap"]], [c[1] for c in report["overlap"]]
    assert [c[2] for c in report["overlap"]] == ["done after 1 steps"] * 4, report["overlap"]
    assert max(starts) < min(ends), report["overlap"]
    # The hub: the ticker sees a blocked hub, and mcpsync never blocked it.
    assert report["calibration"] >= 0.25, report
    assert report["max_gap"] < HUB_BOUND, report
    # timeout= holds: the 5 s call ends at its 0.5 s timeout (bounded, with slack for load).
    kind, took = report["timeout"]
    assert kind == "RequestTimeout" and 0.5 <= took < 2.0, report["timeout"]
    # close() releases the waiting call at once and returns in bounded time.
    close = report["close"]
    assert close["got"] == "ClientClosed" and close["release"] < 1.0 and close["took"] < 5.0, close
    assert report["left"] == {"threads": [], "children": []}, report["left"]
    if transport == "stdio":
        assert len(report["servers"]) == 2, report["servers"]  # one per client
    for pid in report["servers"]:
        assert process_state(pid) is None, f"stdio server {pid} outlived the probe"


def test_stdio_without_select_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """What eventlet leaves: no ``select.poll``.  Calls, a stderr flood (the shared drain
    polls too) and a server's exit still work, on ``select.select``."""
    monkeypatch.delattr(select, "poll")
    with mcpsync.Client.stdio(FAULT, args=["--scenario", "stderr_flood_nonl"], timeout=20) as c:
        for i in range(3):  # 256 KiB of stderr per call: a pipe not drained would stall the server
            assert json.loads(c.call_tool("echo", {"i": i}).text)["i"] == i
        with pytest.raises(mcpsync.ConnectionClosed, match="exit code 3"):
            c.call_tool("echo", {"exit": 3})


def test_a_start_failure_names_its_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    """The error eventlet used to cause, simulated: the cause is in the message, not only chained."""
    from mcpsync.transports.stdio import reader

    def no_poll(fd: int) -> Any:
        raise AttributeError("module 'select' has no attribute 'poll'")

    monkeypatch.setattr(reader, "readable_waiter", no_poll)
    with pytest.raises(ServerStartError) as info:
        with mcpsync.Client.stdio(FAULT, timeout=20) as c:
            c.list_tools()
    assert "AttributeError: module 'select' has no attribute 'poll'" in str(info.value)
