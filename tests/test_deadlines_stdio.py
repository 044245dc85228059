"""Deadlines over stdio (issue 12): writes, connects and the era probe end by the call's deadline.

Real subprocess servers: ``servers/deadline_server.py`` (stops reading, slow ``initialize``,
silent) and the official SDK's server (``servers/sdk_server.py``, dual-era or handshake-only)
started behind a ``sleep``, so that it is slower to start than the probe bound.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import mcpsync

SERVERS = Path(__file__).resolve().parent / "servers"
DEADLINE_SERVER = [sys.executable, str(SERVERS / "deadline_server.py")]
MiB = 1024 * 1024

pytestmark = pytest.mark.timeout(90)


def behind_sleep(seconds: float, *argv: str) -> list[str]:
    """A server command that sleeps first (a first ``uvx`` run, ``docker run -i``, a JVM)."""
    return ["sh", "-c", f'sleep {seconds}; exec "$@"', "sh", *argv]


def test_b7_write_to_a_server_that_stopped_reading_ends_at_the_call_deadline() -> None:
    with mcpsync.Client.stdio([*DEADLINE_SERVER, "stop-reading"], timeout=20,
                              close_grace=0.5, terminate_grace=0.5) as client:
        client.connect()
        start = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            client.call_tool("echo", {"blob": "b" * (10 * MiB)}, timeout=1.0)
        assert time.monotonic() - start < 2.0  # not the 60 s write_timeout


@pytest.mark.parametrize("size", [20 * 1024, 256 * 1024])  # fits the pipe a few times / cut in the pipe
def test_b7_frames_handed_to_a_wedged_writer_end_at_their_own_deadlines(size: int) -> None:
    # Callers that find another thread writing hand their frame over (issue 18) and wait
    # for the reply; with the server not reading, each still ends by its own deadline.
    with mcpsync.Client.stdio([*DEADLINE_SERVER, "stop-reading"], timeout=20,
                              close_grace=0.5, terminate_grace=0.5) as client:
        client.connect()
        ended: list[tuple[float, float, BaseException | None]] = []

        def call(timeout: float) -> None:
            start = time.monotonic()
            try:
                client.call_tool("echo", {"blob": "b" * size}, timeout=timeout)
            except mcpsync.McpError as exc:
                ended.append((timeout, time.monotonic() - start, exc))
            else:
                ended.append((timeout, time.monotonic() - start, None))

        threads = [threading.Thread(target=call, args=(0.5 + 0.25 * (i % 3),)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert not any(thread.is_alive() for thread in threads)
        assert len(ended) == 8
        for timeout, took, exc in ended:
            # A timeout, or the connection closed because a frame was cut at a deadline.
            assert isinstance(exc, (mcpsync.RequestTimeout, mcpsync.ConnectionClosed)), exc
            assert took < timeout + 1.5
        assert any(isinstance(exc, mcpsync.RequestTimeout) for _, _, exc in ended)


def test_b7_request_async_returns_at_once_and_close_releases_its_waiter() -> None:
    client = mcpsync.Client.stdio([*DEADLINE_SERVER, "stop-reading"], timeout=20,
                                  close_grace=0.5, terminate_grace=0.5)
    client.connect()
    start = time.monotonic()
    pending = client.request_async("tools/call", {"name": "echo", "arguments": {"blob": "b" * (10 * MiB)}})
    assert time.monotonic() - start < 0.5  # the wedged write is not the caller's
    outcome: list[BaseException] = []
    waiter = threading.Thread(target=lambda: outcome.append(pytest.raises(mcpsync.McpError, pending.result)
                                                            .value))
    waiter.start()
    start = time.monotonic()
    client.close()
    waiter.join(5)
    assert not waiter.is_alive()
    assert isinstance(outcome[0], mcpsync.ClientClosed)
    assert time.monotonic() - start < 3.0  # close() itself: bounded by its graces


def test_a10_connect_that_times_out_returns_at_its_deadline_and_stops_the_server() -> None:
    # The server answers initialize only after 5 s and reads nothing meanwhile: stopping it
    # takes close_grace + SIGTERM, which must not be the caller's time.
    client = mcpsync.Client.stdio([*DEADLINE_SERVER, "slow-initialize", "5"], timeout=0.5,
                                  close_grace=2.0, terminate_grace=2.0)
    start = time.monotonic()
    with pytest.raises(mcpsync.RequestTimeout):
        client.connect()
    assert time.monotonic() - start < 1.3  # the server's shutdown is not the caller's
    client.close()
    # The autouse leak check then waits (bounded) for the server process and the closer thread.


def test_a10_lazy_connect_is_inside_the_calls_deadline() -> None:
    client = mcpsync.Client.stdio([*DEADLINE_SERVER, "slow-initialize", "5"], timeout=30)
    start = time.monotonic()
    with pytest.raises(mcpsync.RequestTimeout):
        client.request("tools/call", {"name": "echo"}, timeout=0.5)
    assert time.monotonic() - start < 1.3
    client.close()


def test_b12_dual_era_server_slower_than_the_probe_bound_connects_in_the_modern_era() -> None:
    argv = behind_sleep(3, sys.executable, str(SERVERS / "sdk_server.py"))
    with mcpsync.Client.stdio(argv, timeout=30, discover_timeout=0.5) as client:
        assert client.era == "modern"
        assert client.protocol_version == "2026-07-28"
        assert client.call_tool("echo", {"text": "hi"}).text


def test_b12_handshake_only_server_slower_than_the_probe_bound_costs_little_more() -> None:
    argv = behind_sleep(3, sys.executable, str(SERVERS / "sdk_server.py"), "--legacy-only")
    start = time.monotonic()
    with mcpsync.Client.stdio(argv, timeout=30, discover_timeout=0.5) as client:
        assert client.era == "legacy"
        elapsed = time.monotonic() - start
        assert client.call_tool("echo", {"text": "hi"}).text
    # Its own start-up (3 s sleep plus Python and the SDK importing) plus about the probe
    # bound; never the 30 s connect timeout.
    assert elapsed < 3 + 6


def test_b12_handshake_only_server_that_ignores_the_probe_costs_about_the_probe_bound() -> None:
    # A fast handshake-era server that does not answer server/discover at all.
    argv = behind_sleep(0, sys.executable, "-c", IGNORES_PROBE)
    start = time.monotonic()
    with mcpsync.Client.stdio(argv, timeout=30, discover_timeout=0.5) as client:
        assert client.era == "legacy"
    assert time.monotonic() - start < 0.5 + 2.0


def test_b12_modern_mode_against_a_silent_server_says_it_timed_out() -> None:
    client = mcpsync.Client.stdio([*DEADLINE_SERVER, "silent"], timeout=1.5, mode="modern",
                                  close_grace=0.5, terminate_grace=0.5)
    start = time.monotonic()
    with pytest.raises(mcpsync.RequestTimeout, match="timed out"):
        client.connect()
    assert time.monotonic() - start < 2.5
    client.close()


def test_b12_discover_timeout_is_a_client_option_passed_through_every_constructor(tmp_path: Path) -> None:
    config = {"mcpServers": {"s": {"command": sys.executable, "args": [str(SERVERS / "deadline_server.py"), "x"]}}}
    for client in (mcpsync.Client.stdio([*DEADLINE_SERVER, "x"], discover_timeout=0.25),
                   mcpsync.Client.from_config(config, "s", discover_timeout=0.25),
                   mcpsync.Client.http("http://127.0.0.1:9/mcp", discover_timeout=0.25)):
        assert client._options.discover_timeout == 0.25
        client.close()


#: A handshake-era server that ignores server/discover silently (as some do) and answers
#: initialize; stdlib only.
IGNORES_PROBE = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {},
            "serverInfo": {"name": "ignores-probe", "version": "1"}}}), flush=True)
"""


def _slow_demo(seconds: int) -> list[str]:
    # A server that takes *seconds* to start: another thread's connect is still running.
    return ["sh", "-c", f"sleep {seconds}; exec {sys.executable} -m mcpsync.demo"]


def test_a_call_waiting_for_another_threads_connect_ends_by_its_own_deadline() -> None:
    client = mcpsync.Client.stdio(_slow_demo(5), timeout=20)
    first: list[BaseException | None] = []
    connecting = threading.Thread(target=lambda: _outcome(client.connect, first))
    try:
        connecting.start()
        while client._life.connecting is None and connecting.is_alive():
            time.sleep(0.01)
        started = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout, match="another thread is still connecting"):
            client.list_tools(timeout=0.5)
        assert time.monotonic() - started < 2.0
        # close() ends the connect in progress and releases whoever waits for it at once;
        # stopping the server (it ignores stdin while it sleeps) goes on in close() alone.
        waiting: list[BaseException | None] = []
        waiter = threading.Thread(target=lambda: _outcome(lambda: client.list_tools(timeout=None), waiting))
        waiter.start()
        time.sleep(0.2)
        closer = threading.Thread(target=client.close)
        closed_at = time.monotonic()
        closer.start()
        waiter.join(5)
        connecting.join(5)
        released = time.monotonic() - closed_at
        assert not waiter.is_alive() and not connecting.is_alive()
        assert released < 1.5, released
        assert isinstance(waiting[0], mcpsync.ClientClosed), waiting
        assert isinstance(first[0], mcpsync.ClientClosed), first
        closer.join(15)
        assert not closer.is_alive()
    finally:
        client.close()
        connecting.join(10)


def _outcome(fn: Callable[[], object], into: list[BaseException | None]) -> None:
    try:
        fn()
        into.append(None)
    except BaseException as exc:  # noqa: BLE001 - the test asserts on it
        into.append(exc)
