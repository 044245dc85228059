"""The example apps under a real gunicorn (``--preload``, 3 workers, 4 threads each).

Per framework: concurrent requests on the shared demo clients (one demo
server per worker, none in the master), a killed demo server (requests get an
answer within their timeout, then the worker recovers), slow calls cut at
their timeout, two users connecting an OAuth-protected server (oidc-provider)
across workers without ever seeing each other's tokens, and a shutdown that
leaves no server process behind (checked in the process table).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest
import requests

from tests.auth_server.conftest_auth import auth_server, follow_to_callback, resource_server  # noqa: F401
from tests.contrib_support import EXAMPLES, SERVER_MARKERS, TEST_KEY, LineWaiter, remote_entry, stubborn_config

pytestmark = pytest.mark.timeout(240)

WORKERS, THREADS = 3, 4
MCP_TIMEOUT = 5.0
#: A request's answer may take its MCP timeout plus the time to start a new server.
ANSWER_BOUND = MCP_TIMEOUT + 10.0


def _proc_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) for every process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        table[int(entry.name)] = (int(fields[1]), fields[0], cmdline)
    return table


def _descendants(root: int) -> dict[int, str]:
    table = _proc_table()
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _state, cmd) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = cmd
                frontier.append(pid)
    return found


def _alive(pid: int) -> bool:
    entry = _proc_table().get(pid)
    return entry is not None and entry[1] != "Z"


class Gunicorn:
    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        try:
            self.url = self._wait_ready()
        except BaseException:
            self.stop()  # a failed start must not leave the master, its workers and their servers behind
            raise
        self.servers_seen: dict[int, str] = {}

    def _wait_ready(self) -> str:
        assert self.proc.stderr is not None
        self.output = LineWaiter(self.proc.stderr)
        url = self.output.wait(r"Listening at: (http://127\.0\.0\.1:\d+)").group(1)
        for _ in range(WORKERS):
            self.output.wait("Booting worker")
        return url

    def mcp_servers(self) -> dict[int, str]:
        """Demo server processes under the master now (all are remembered for the shutdown check)."""
        found = {pid: cmd for pid, cmd in _descendants(self.proc.pid).items()
                 if any(m in cmd for m in SERVER_MARKERS)}
        self.servers_seen.update(found)
        return found

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(45)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        assert self.proc.stderr is not None
        self.proc.stderr.close()


def _django(tmp_path: Path, env: dict[str, str]) -> tuple[list[str], Path]:
    root = EXAMPLES / "django_app"
    env["MCPSITE_DB"] = str(tmp_path / "db.sqlite3")
    env["MCPSITE_DEMO_LOGIN"] = "1"
    done = subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return ["mcpsite.wsgi:application"], root


def _flask(tmp_path: Path, env: dict[str, str]) -> tuple[list[str], Path]:
    env["MCP_TOKEN_DIR"] = str(tmp_path / "tokens")
    env["FLASK_SECRET_KEY"] = "test-only"
    return ["app:app"], EXAMPLES / "flask_app"


@pytest.fixture(params=["django", "flask"])
def served(request: pytest.FixtureRequest, tmp_path: Path, resource_server: str) -> Iterator[tuple[str, Gunicorn]]:  # noqa: F811
    env = {**os.environ, "MCP_TOKEN_KEY": TEST_KEY,
           "MCP_TIMEOUT": str(MCP_TIMEOUT), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    # The stubborn demo server exits on a signal only: gone after shutdown means closed by the app.
    env["MCP_CONFIG"] = stubborn_config(tmp_path, remote=remote_entry(resource_server))
    target, cwd = (_django if request.param == "django" else _flask)(tmp_path, env)
    argv = [sys.executable, "-m", "gunicorn", "--preload", "-w", str(WORKERS), "--threads", str(THREADS),
            "-k", "gthread", "-b", "127.0.0.1:0", "--graceful-timeout", "20", "--timeout", "60", *target]
    server = Gunicorn(argv, cwd, env)
    try:
        yield request.param, server
    finally:
        server.stop()
    # After shutdown: no demo server left, not even as a zombie or an orphan re-parented to init.
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in server.servers_seen) and time.monotonic() < deadline:
        time.sleep(0.1)  # the processes are not ours to wait on: poll the process table
    left = {pid: cmd for pid, cmd in server.servers_seen.items() if _alive(pid)}
    assert not left, f"server processes outlived gunicorn: {left}"
    assert server.servers_seen, "the test saw no server process to check"


def _timed_get(session: requests.Session, url: str) -> tuple[int, float, Any]:
    started = time.monotonic()
    response = session.get(url, timeout=ANSWER_BOUND + 5, allow_redirects=False)
    elapsed = time.monotonic() - started
    body = response.json() if response.headers.get("Content-Type", "").startswith("application/json") else None
    return response.status_code, elapsed, body


def test_example_under_gunicorn(served: tuple[str, Gunicorn]) -> None:
    framework, server = served
    base = server.url
    assert server.mcp_servers() == {}  # --preload: the master imported the app, started nothing

    # Concurrent requests on the shared clients, spread over the workers.
    def add(i: int) -> tuple[int, float, Any]:
        with requests.Session() as session:
            return _timed_get(session, f"{base}/add?a={i}&b=1")

    workers: set[int] = set()
    for _ in range(5):  # the kernel picks the worker: go on until two have served
        with ThreadPoolExecutor(12) as pool:
            results = list(pool.map(add, range(90)))
        assert all(status == 200 for status, _, _ in results), results
        assert [body["sum"] for _, _, body in results] == [i + 1.0 for i in range(90)]
        workers |= {body["pid"] for _, _, body in results}
        if len(workers) >= 2:
            break
    servers = server.mcp_servers()
    assert len(servers) == len(workers) >= 2  # one demo server per worker that served a request
    master_children = {pid for pid, (ppid, _, _) in _proc_table().items() if ppid == server.proc.pid}
    assert not set(servers) & master_children

    # Kill one worker's server while requests (some slow) are in flight: every request is
    # answered within its bound, and the workers serve again afterwards.
    victim = next(iter(servers))
    def mixed(i: int) -> tuple[int, float, Any]:
        with requests.Session() as session:
            path = "/slow?n=3&delay=0.2" if i % 3 == 0 else f"/add?a={i}&b=0"
            return _timed_get(session, base + path)

    with ThreadPoolExecutor(12) as pool:
        futures = [pool.submit(mixed, i) for i in range(36)]
        os.kill(victim, signal.SIGKILL)
        outcomes = [f.result() for f in futures]
    assert all(elapsed < ANSWER_BOUND for _, elapsed, _ in outcomes), outcomes
    assert all(status in (200, 502, 504) for status, _, _ in outcomes), outcomes
    for status, _, body in outcomes:
        if status != 200:
            assert body["error"] in ("ConnectionClosed", "ClientClosed", "ServerStartError", "RequestTimeout"), body
    with ThreadPoolExecutor(12) as pool:
        after = list(pool.map(add, range(30)))
    assert all(status == 200 for status, _, _ in after), after
    assert not _alive(victim)

    # A call longer than its timeout is cut at the timeout, on every worker at once.
    with ThreadPoolExecutor(6) as pool:
        slow = list(pool.map(lambda _: _timed_get(requests.Session(), f"{base}/slow?n=100&timeout=1"), range(6)))
    assert all(status == 504 and body["error"] == "RequestTimeout" and elapsed < ANSWER_BOUND
               for status, elapsed, body in slow), slow

    # Two users connect the protected server; the callback may land on any worker.
    alice, bob = requests.Session(), requests.Session()
    for name, session in (("alice", alice), ("bob", bob)):
        if framework == "django":
            assert session.get(f"{base}/login?user={name}", timeout=10).status_code == 200
    first = alice.get(f"{base}/remote/tools", allow_redirects=False, timeout=30)
    assert first.status_code == 302
    callback = follow_to_callback(urljoin(base, first.headers["Location"]))
    assert callback.startswith(base + "/mcp/callback/remote")
    assert bob.get(callback, allow_redirects=False, timeout=30).status_code == 400  # not bob's login
    back = alice.get(callback, allow_redirects=False, timeout=30)
    assert back.status_code == 302, back.text

    def tools(session: requests.Session) -> int:
        return session.get(f"{base}/remote/tools", allow_redirects=False, timeout=30).status_code

    with ThreadPoolExecutor(8) as pool:
        seen = list(pool.map(tools, [alice, bob] * 12))
    assert seen == [200, 302] * 12  # alice on every worker; bob never gets alice's tokens
    alice.close()
    bob.close()


@pytest.mark.parametrize("framework", ["django", "flask"])
def test_bad_settings_stop_gunicorn_at_startup(framework: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    env.pop("MCP_CONFIG", None)
    target, cwd = (_django if framework == "django" else _flask)(tmp_path, env)
    (tmp_path / "mcp.json").write_text('{"mcpServers": {"demo": {"command": "no-such-program-h19"}}}')
    env["MCP_CONFIG"] = str(tmp_path / "mcp.json")
    done = subprocess.run([sys.executable, "-m", "gunicorn", "--preload", "-w", "2", "-b", "127.0.0.1:0", *target],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "(mcpsync.E003) MCP_SERVERS['demo']: command 'no-such-program-h19'" in done.stderr
    assert "Booting worker" not in done.stderr
