"""A module-level stdio client in a WSGI app under a real uWSGI, ``--master --processes 2`` (issue 25).

``tests/envs/wsgi_app.py`` makes the client at import, in the master; each forked worker connects
on its first call.  Checked: concurrent requests are served by both workers with their own
servers, a request after the workers sat idle still works, a graceful reload (SIGHUP) ends the old
workers' servers and the new workers work, and SIGTERM (``--die-on-term``) leaves no server
process: the server is ``tests/servers/stubborn_server.py``, which ignores its stdin's EOF, so
"gone" means the client closed it.

Two uWSGIs: the one from the test extra (threads are always on since 2.0.27), and uWSGI 2.0.26
started *without* ``--enable-threads`` (its Python threads then run only while a request runs
Python code); it must work too, or fail at once, never hang.  2.0.26 is built on first use into
``.env-uwsgi-2.0.26-py3.X/`` beside the checkout (about 40 s; reused afterwards), bounded like the peer
venv (``helpers_peervenv``).
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers_peervenv import _run
from helpers_proc import process_state
from test_contrib_gunicorn import _descendants, _proc_table

from tests.contrib_support import free_port

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "tests" / "envs" / "wsgi_app.py"
OLD = "2.0.26"
OLD_HOME = ROOT / f".env-uwsgi-{OLD}-py{sys.version_info[0]}.{sys.version_info[1]}"  # built for this Python

pytestmark = pytest.mark.timeout(300)  # building the old uWSGI included


def old_uwsgi() -> str:
    """uWSGI 2.0.26 (the last release whose threads are off by default), built once."""
    binary = OLD_HOME / "bin" / "uwsgi"
    with open(Path(tempfile.gettempdir()) / f"mcpsync-tests-{OLD_HOME.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return str(binary)
        base = getattr(sys, "_base_executable", sys.executable)  # the same Python as the app's
        _run([base, "-m", "venv", "--clear", str(OLD_HOME)], f"creating {OLD_HOME}")
        _run([str(OLD_HOME / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
              f"uwsgi=={OLD}"], f"building uWSGI {OLD}")
    return str(binary)


class UWsgi:
    def __init__(self, binary: str, log: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        argv = [binary, "--master", "--processes", "2", "--http-socket", f"127.0.0.1:{self.port}",
                "--home", sys.prefix, "--wsgi-file", str(APP), "--need-app", "--die-on-term"]
        env = {**os.environ, "MCP_ENV_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.seen: dict[int, str] = {}

    def get(self, path: str, timeout: float = 30) -> dict[str, Any]:
        reply = requests.get(self.base + path, timeout=timeout)
        body: dict[str, Any] = reply.json()
        assert reply.status_code == 200, body
        return body

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            assert self.proc.poll() is None, f"uWSGI exited:\n{self.log.read_text()[-3000:]}"
            try:
                self.get("/add?a=1&b=2", timeout=5)
                return
            except requests.ConnectionError:
                assert time.monotonic() < deadline, f"uWSGI did not answer:\n{self.log.read_text()[-3000:]}"
                time.sleep(0.1)

    def servers(self) -> dict[int, str]:
        """The stubborn servers under the master now (all are remembered in ``seen``)."""
        found = servers_under(self.proc.pid)
        self.seen.update(found)
        return found

    def stop(self) -> None:
        stop(self.proc)


def servers_under(root: int) -> dict[int, str]:
    """The stubborn servers among the descendants of *root*."""
    return {pid: cmd for pid, cmd in _descendants(root).items() if "stubborn_server.py" in cmd}


def stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """SIGTERM *proc* and wait; past *timeout* (a failing test), SIGKILL it and its servers."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            stray = servers_under(proc.pid)
            proc.kill()
            proc.wait(10)
            gone(stray, 0)


def gone(pids: Any, within: float) -> list[int]:
    """The pids still alive after *within* seconds, then killed (they are not ours to wait on)."""
    deadline = time.monotonic() + within
    while True:
        alive = [pid for pid in pids if process_state(pid) not in (None, "Z")]
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for pid in alive:  # a failing test leaves nothing behind either
        os.kill(pid, signal.SIGKILL)
    return alive


@pytest.fixture(params=["current", f"{OLD}-without-threads"])
def uwsgi(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[UWsgi]:
    binary = str(Path(sys.executable).parent / "uwsgi") if request.param == "current" else old_uwsgi()
    server = UWsgi(binary, tmp_path / "uwsgi.log")
    try:
        server.wait_ready()
        disabled = "Python threads support is disabled" in server.log.read_text()
        assert disabled == (request.param != "current"), server.log.read_text()[-3000:]
        yield server
    finally:
        server.stop()


def spread(server: UWsgi) -> set[int]:
    """4 concurrent 1 s calls: each worker serves two, one after the other; the workers' pids."""
    with ThreadPoolExecutor(4) as pool:
        bodies = list(pool.map(lambda _: server.get("/countdown?n=1&delay=1.0"), range(4)))
    assert [b["text"] for b in bodies] == ["Liftoff!"] * 4, bodies
    return {b["pid"] for b in bodies}


def test_module_level_client_across_workers(uwsgi: UWsgi) -> None:
    workers = spread(uwsgi)
    assert len(workers) == 2, workers
    first = uwsgi.servers()
    assert len(first) == 2 and {_proc_table()[pid][0] for pid in first} == workers, first
    time.sleep(1.0)  # idle workers (without threads, nothing of the client runs meanwhile)
    assert uwsgi.get("/add?a=2&b=3")["text"] == "5"
    # A graceful reload: the old workers close their servers, the new ones start their own.
    uwsgi.proc.send_signal(signal.SIGHUP)
    left = gone(first, 30)
    assert not left, f"servers outlived their reloaded workers: {left}"
    uwsgi.wait_ready()
    assert spread(uwsgi).isdisjoint(workers)
    assert len(uwsgi.servers()) == 2
    uwsgi.stop()
    assert uwsgi.proc.returncode == 0, uwsgi.log.read_text()[-3000:]
    left = gone(uwsgi.seen, 15)
    assert not left, f"server processes outlived uWSGI: {left}"
    assert len(uwsgi.seen) == 4

