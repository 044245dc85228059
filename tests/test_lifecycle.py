"""Lifecycle (RELIABILITY B6, E5, E6): open/close cycles leak nothing; process exit leaves no orphan.

* Open/close cycles of a stdio client, counting every thread of this process, its child
  processes (zombies included) and its file descriptors: the counts return to where they
  started. The normal suite runs 60 cycles; ``MCPSYNC_STRESS=1`` (``tox -e stress``) runs 1000.
* Interpreter exit with calls in flight, one subprocess per scenario (grpc ``_exit_test``
  pattern): ``sys.exit``, an uncaught exception, SIGINT while the main thread waits on a call,
  SIGTERM. Each must exit within 5 s, and the server's liveness socket (observed from outside)
  must close within 5 s after that. The ``linger`` variants use a server that does not exit on
  stdin EOF, so only the client's own shutdown can stop it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from helpers_proc import (
    LivenessListener,
    assert_no_leaks,
    child_pids,
    fd_count,
    snapshot,
)

import mcpsync

HEAVY = os.environ.get("MCPSYNC_STRESS") == "1"
CYCLES = 1000 if HEAVY else 60
TESTS = Path(__file__).resolve().parent
REL_SERVER = TESTS / "servers" / "rel_server.py"
ECHO_SERVER = TESTS / "servers" / "stdlib_echo_server.py"
EXIT_BOUND = 5.0


def all_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate())


def mcpsync_thread_names() -> list[str]:
    return [name for name in all_threads() if name.startswith("mcpsync-")]


@pytest.mark.timeout(120)
def test_close_returns_when_every_thread_of_the_connection_is_gone() -> None:
    """Closed means gone: close() returns after the connection's threads ended, the shared
    ``mcpsync-stderr`` thread included when it drained the last connection (issue 23, item 4:
    a snapshot taken right after close() once caught it winding down)."""
    before = mcpsync_thread_names()  # a client another test keeps open, if any
    stop = threading.Event()

    def burn() -> None:  # competes for the GIL, as a busy process does: a thread winding down waits
        while not stop.is_set():
            sum(range(1000))

    burner = threading.Thread(target=burn, name="test-burner", daemon=True)
    burner.start()
    try:
        for cycle in range(100):
            with mcpsync.Client.stdio([sys.executable, str(ECHO_SERVER)], mode="legacy") as client:
                client.ping()
            assert mcpsync_thread_names() == before, f"cycle {cycle}"
    finally:
        stop.set()
        burner.join(5)


@pytest.mark.timeout(900 if HEAVY else 120)
def test_open_close_cycles_leak_no_process_thread_or_fd() -> None:
    # One warm-up cycle: lazily created module state (loggers, codecs, the server reaper's
    # socket) is not a leak.  Its threads are gone when close() returns, so the baseline is exact.
    before = mcpsync_thread_names()
    with mcpsync.Client.stdio([sys.executable, str(ECHO_SERVER)], mode="legacy") as client:
        client.ping()
    assert mcpsync_thread_names() == before
    threads, children, fds = all_threads(), child_pids(), fd_count()
    for cycle in range(CYCLES):
        client = mcpsync.Client.stdio([sys.executable, str(ECHO_SERVER)], mode="legacy")
        try:
            assert client.call_tool("echo", {"text": f"cycle {cycle}"}).text == f"cycle {cycle}"
        finally:
            client.close()
        if cycle % 100 == 99:
            # Counted while running, not only at the end: a slow leak shows up early.
            assert child_pids() == children, f"cycle {cycle}: children {child_pids() - children}"
            assert fd_count() <= fds + 2, f"cycle {cycle}: fds {fds} -> {fd_count()}"
    deadline = time.monotonic() + 5
    while (all_threads() != threads or child_pids() != children or fd_count() > fds) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all_threads() == threads
    assert child_pids() == children
    assert fd_count() <= fds, f"fds {fds} -> {fd_count()}"


def close_race_round() -> None:
    """Six threads call a slow tool while three threads close the client."""
    client = mcpsync.Client.stdio([sys.executable, str(REL_SERVER)], mode="legacy")
    client.connect()
    outcomes: list[BaseException | str] = []
    barrier = threading.Barrier(9)

    def caller() -> None:
        barrier.wait(10)
        try:
            outcomes.append(client.call_tool("slow", {"text": "x", "ms": 30_000}, timeout=60).text)
        except mcpsync.ConnectionClosed as exc:  # ClientClosed is one
            outcomes.append(exc)

    def closer() -> None:
        barrier.wait(10)
        client.close()

    threads = [threading.Thread(target=caller, daemon=True) for _ in range(6)]
    threads += [threading.Thread(target=closer, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    assert not any(t.is_alive() for t in threads), "a caller or closer hung"
    assert len(outcomes) == 6 and all(isinstance(o, mcpsync.ClientClosed) for o in outcomes), outcomes
    with pytest.raises(mcpsync.ClientClosed):
        client.ping()


@pytest.mark.timeout(120)
def test_close_from_many_threads_during_calls_is_bounded() -> None:
    """E6: close() races calls from other threads; everyone returns promptly with a clear outcome."""
    before = snapshot()
    for _ in range(5):
        close_race_round()
    assert_no_leaks(before)


SCENARIO = textwrap.dedent(
    """
    import os, sys, threading, time
    import mcpsync

    server, port, how, linger = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
    argv = [sys.executable, server, "--liveness-port", port] + (["--linger", "60"] if linger else [])
    client = mcpsync.Client.stdio(argv, mode="legacy")
    client.connect()

    def call():
        try:
            client.call_tool("slow", {"text": "x", "ms": 60000}, timeout=120)
        except BaseException:
            pass

    for _ in range(4):
        threading.Thread(target=call, daemon=True).start()
    while client._conn.session.pending_count() < 4:
        time.sleep(0.01)
    print("ready", flush=True)
    if how == "exit":
        sys.exit(0)
    if how == "raise":
        raise RuntimeError("uncaught on purpose")
    # sigint / sigterm: the main thread is itself waiting on a call when the signal comes.
    client.call_tool("slow", {"text": "main", "ms": 60000}, timeout=120)
    """
)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("how", "linger"),
    [
        ("exit", False),
        ("raise", False),
        ("sigint", False),
        ("sigterm", False),
        ("exit", True),
        ("raise", True),
        ("sigint", True),
    ],
)
def test_interpreter_exit_with_calls_in_flight(how: str, linger: bool) -> None:
    with LivenessListener() as live:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCENARIO, str(REL_SERVER), str(live.port), how, "1" if linger else "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(TESTS.parent)},
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line == b"ready\n", (line, proc.stderr.read() if proc.poll() is not None else b"")  # type: ignore[union-attr]
            live.wait_connected(1)
            began = time.monotonic()
            if how == "sigint":
                proc.send_signal(signal.SIGINT)
            elif how == "sigterm":
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(EXIT_BOUND)
            except subprocess.TimeoutExpired:
                pytest.fail(f"client process did not exit within {EXIT_BOUND} s of {how}")
            exited = time.monotonic() - began
            assert live.wait_all_closed(EXIT_BOUND), f"orphan server left after {how}: {live.open_roles()}"
            print(f"\n{how} linger={linger}: client exited in {exited:.2f} s, server gone by {time.monotonic() - began:.2f} s")
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(5)
            for pid in live.connected.values():
                try:
                    os.kill(pid, signal.SIGKILL)  # only if the test already failed
                except ProcessLookupError:
                    pass
            proc.stdout.close()  # type: ignore[union-attr]
            proc.stderr.close()  # type: ignore[union-attr]
