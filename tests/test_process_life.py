"""Process life (issue 25): no server outlives its host, Ctrl-C and signals stop what they should.

Real subprocess servers (``tests/servers/fault_server.py``), observed from outside: each
server connects to a :class:`~helpers_proc.LivenessListener` and its socket reaching EOF
means the process is gone.  Scenarios that end a host process run that host as a
subprocess of its own; Ctrl-C inside this process is a real SIGINT sent to the main thread
(``signal.pthread_kill``), which is what a terminal does.

* a failed or interrupted connect: ``close()`` returns once the server is gone, and a
  script that exits without closing leaves no server behind;
* Ctrl-C during ``close()`` propagates, and the server is killed first;
* a forked child that never touches the client does not hold the server's stdin;
* ``close()`` from a signal handler that interrupted a write ends the server with EOF;
* a SIGKILLed host (the OOM killer, a gunicorn timeout) leaves no server, even one that
  ignores EOF and SIGTERM, with its whole process group; a forked child's death kills
  only the child's own servers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers_proc import LivenessListener, process_state

import mcpsync

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups"),
    pytest.mark.timeout(60),
]

TESTS = Path(__file__).resolve().parent
FAULT = str(TESTS / "servers" / "fault_server.py")
#: How long a server may outlive what should have stopped it ("within a few seconds").
GONE_WITHIN = 5.0


def server_argv(live: LivenessListener, *options: str) -> list[str]:
    return [sys.executable, FAULT, "--liveness-port", str(live.port), *options]


def interrupt_main_after(delay: float, signum: int = signal.SIGINT) -> threading.Timer:
    """Send *signum* to this process's main thread after *delay* s (Ctrl-C is SIGINT)."""
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(delay, signal.pthread_kill, (main, signum))
    timer.start()
    return timer


@pytest.fixture
def live() -> Iterator[LivenessListener]:
    with LivenessListener() as listener:
        yield listener
        for pid in listener.connected.values():  # only if a test already failed
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# --------------------------------------------------------------------------- defect 1


def test_close_after_a_connect_timeout_returns_when_the_server_is_gone(live: LivenessListener) -> None:
    """A server that takes 3 s to start and ignores EOF; the connect times out at 1 s."""
    argv = server_argv(live, "--start-delay", "3", "--stay-after-eof")
    client = mcpsync.Client.stdio(argv, mode="legacy", timeout=1, close_grace=0.5, terminate_grace=0.5)
    with pytest.raises(mcpsync.RequestTimeout):
        client.connect()
    (pid,) = live.wait_connected(1).values()
    client.close()
    # Closed means gone: the server was stopped (it ignores EOF) and reaped before close() returned.
    assert process_state(pid) is None


HOST_CONNECT = textwrap.dedent(
    """
    import sys, mcpsync
    client = mcpsync.Client.stdio(sys.argv[2:], mode="legacy", timeout=float(sys.argv[1]))
    try:
        client.connect()
    except mcpsync.RequestTimeout:
        print("timed out", flush=True)
    """
)


@pytest.mark.parametrize("how", ["timeout", "sigint"])
def test_a_script_that_exits_after_a_failed_connect_leaves_no_server(live: LivenessListener, how: str) -> None:
    """The script ends without close(): after a connect timeout, or Ctrl-C during the connect."""
    argv = server_argv(live, "--start-delay", "30", "--stay-after-eof")
    timeout = "1" if how == "timeout" else "60"
    host = subprocess.Popen([sys.executable, "-c", HOST_CONNECT, timeout, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(TESTS.parent)})
    try:
        live.wait_connected(1)
        if how == "sigint":
            host.send_signal(signal.SIGINT)
        host.wait(GONE_WITHIN)
        assert live.wait_all_closed(GONE_WITHIN), f"server left running after {how}: {live.open_roles()}"
    finally:
        if host.poll() is None:
            host.kill()
        host.wait(5)
        assert host.stdout is not None
        host.stdout.close()


# --------------------------------------------------------------------------- defect 2


def test_ctrl_c_during_close_propagates_and_kills_the_server(live: LivenessListener) -> None:
    argv = server_argv(live, "--stay-after-eof", "--ignore-sigterm")
    client = mcpsync.Client.stdio(argv, mode="legacy", close_grace=20, terminate_grace=20)
    client.connect()
    (pid,) = live.wait_connected(1).values()
    timer = interrupt_main_after(0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            client.close()  # waits close_grace for a server that ignores EOF: Ctrl-C
    finally:
        timer.cancel()
    assert process_state(pid) is None, "the server outlived a Ctrl-C during close()"
    client.close()  # idempotent: nothing left to do


# --------------------------------------------------------------------------- defect 3


def test_a_forked_child_that_never_uses_the_client_does_not_hold_the_servers_stdin(
    live: LivenessListener, tmp_path: Path
) -> None:
    signals = tmp_path / "signals.log"
    client = mcpsync.Client.stdio(server_argv(live, "--signal-log", str(signals)), mode="legacy", close_grace=5)
    client.connect()
    transport = client._conn.transport  # type: ignore[union-attr]
    child = os.fork()
    if child == 0:  # a multiprocessing/Celery/gunicorn worker that never touches the client
        time.sleep(20)
        os._exit(0)
    try:
        client.close()
        # EOF ended the server: nothing was signalled, although the child still runs.
        assert transport.signals_sent == [], transport.signals_sent
        assert not signals.exists()
        assert transport.returncode == 0
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


# --------------------------------------------------------------------------- defect 6


def test_close_from_a_signal_handler_that_interrupted_a_write_ends_the_server_with_eof(
    live: LivenessListener,
) -> None:
    """The main thread is writing a large call to a server that is not reading (the write
    lock is held) when the handler calls close(): the server must still get EOF, not SIGTERM."""
    client = mcpsync.Client.stdio(server_argv(live), mode="legacy", close_grace=10)
    client.connect()
    transport = client._conn.transport  # type: ignore[union-attr]
    client.request_async("tools/call", {"name": "echo", "arguments": {"block": 2}})  # stops reading
    closed: list[float] = []

    def handler(signum: int, frame: object) -> None:
        client.close()
        closed.append(time.monotonic())

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        timer = interrupt_main_after(0.5, signal.SIGUSR1)
        with pytest.raises(mcpsync.ClientClosed):
            client.call_tool("echo", {"text": "x" * 4_000_000}, timeout=30)
        timer.join()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert closed, "the handler did not run"
    client.close()  # waits for the shutdown the handler started
    assert transport.signals_sent == [], transport.signals_sent
    assert transport.returncode == 0


# --------------------------------------------------------------------------- the host's death

HOST_SERVE = textwrap.dedent(
    """
    import os, sys, time, mcpsync
    client = mcpsync.Client.stdio(sys.argv[1:], mode="legacy").connect()
    print(client._conn.transport.pid, flush=True)
    if os.environ.get("FORK") == "1":
        child = os.fork()
        if child == 0:  # the child's own server, on the client it inherited
            client.call_tool("echo", {"text": "child"})
            print(os.getpid(), client._conn.transport.pid, flush=True)
            time.sleep(600)
            os._exit(0)
    for line in sys.stdin:  # each line: one call, answered "ok"
        print("ok" if client.call_tool("echo", {"text": line}).text else "?", flush=True)
    """
)


def start_host(live: LivenessListener, fork: bool = False) -> subprocess.Popen[str]:
    argv = server_argv(live, "--stay-after-eof", "--ignore-sigterm", "--spawn-tree")
    return subprocess.Popen(
        [sys.executable, "-c", HOST_SERVE, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(TESTS.parent), "FORK": "1" if fork else "0"},
    )


def stop_host(host: subprocess.Popen[str]) -> None:
    if host.poll() is None:
        host.kill()
    host.wait(5)
    for stream in (host.stdin, host.stdout):
        if stream is not None:
            stream.close()


def test_no_server_outlives_a_sigkilled_host(live: LivenessListener) -> None:
    """The server ignores EOF and SIGTERM and has a child and a grandchild in its group."""
    host = start_host(live)
    try:
        assert host.stdout is not None
        int(host.stdout.readline())
        live.wait_connected(3)  # server, child, grandchild
        host.kill()  # SIGKILL: no atexit, no finally, no close()
        host.wait(5)
        assert live.wait_all_closed(GONE_WITHIN), f"left running: {live.open_roles()}"
    finally:
        stop_host(host)


def test_a_forked_childs_death_kills_its_own_servers_and_not_its_parents(live: LivenessListener) -> None:
    host = start_host(live, fork=True)
    try:
        assert host.stdout is not None and host.stdin is not None
        parent_server = int(host.stdout.readline())
        child, child_server = map(int, host.stdout.readline().split())
        roles = live.wait_connected(6)  # two servers, each with a child and a grandchild
        assert {parent_server, child_server} <= set(roles.values())
        os.kill(child, signal.SIGKILL)
        deadline = time.monotonic() + GONE_WITHIN
        while len(live.open_roles()) > 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        still = live.open_roles()
        assert len(still) == 3 and f"server {parent_server}" in still, still
        host.stdin.write("after the child died\n")
        host.stdin.flush()
        assert host.stdout.readline() == "ok\n"  # the parent's connection still works
        host.kill()
        host.wait(5)
        assert live.wait_all_closed(GONE_WITHIN), f"left running: {live.open_roles()}"
    finally:
        stop_host(host)


@pytest.mark.timeout(60)
def test_a_fork_pool_process_that_exits_leaves_no_server() -> None:
    """A multiprocessing (or Celery prefork) pool process ends with os._exit(), so no atexit
    hook closes its client: its guardian must end the server that ignores EOF."""
    script = Path(__file__).parent / "envs" / "prefork_orphan.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=45)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "left running after their pool process exited: []" in proc.stdout
