"""Shared fixtures: the real MCP servers the integration tests talk to, and a leak check.

* :func:`sdk_server` is the command line of ``tests/servers/sdk_server.py`` (the official Python
  SDK, served over stdio).
* :func:`everything_server` installs ``@modelcontextprotocol/server-everything`` from
  ``tests/node/package-lock.json`` (``npm ci``) when it is missing, and returns the command that
  serves it over stdio. CI must run these tests, so a missing ``npm`` or a failed install is a
  test error, never a skip.
* :func:`_no_leaks` (autouse) fails a test that leaves behind a thread named ``mcpsync-*`` or a
  child process. Tests that deliberately keep a client beyond their own end (a module-scoped
  fixture, say) are unaffected: what existed before the test started is not counted.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SERVERS = TESTS / "servers"
NODE_DIR = TESTS / "node"
EVERYTHING_PACKAGE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything"

#: Bound on ``npm ci``: a fresh install takes seconds here; a hung registry must not hang CI.
NPM_TIMEOUT = 300.0
#: How long a test's threads and child processes get to finish after the test returns. A
#: closed client joins its threads with its own bounded timeouts, so this only absorbs
#: scheduling jitter on a loaded machine.
LEAK_GRACE = 5.0

# The test servers share small modules (e.g. the SDK server's catalog) with the tests.
if str(SERVERS) not in sys.path:
    sys.path.insert(0, str(SERVERS))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "allow_leaks: do not fail the test for leftover mcpsync-* threads or child processes"
    )


# --------------------------------------------------------------------------- servers


@pytest.fixture(scope="session")
def sdk_server_script() -> Path:
    """Path of the official-SDK test server (run it with ``sys.executable``)."""
    return SERVERS / "sdk_server.py"


@pytest.fixture(scope="session")
def sdk_server(sdk_server_script: Path) -> list[str]:
    """Command line that serves the official-SDK test server over stdio (append options)."""
    return [sys.executable, str(sdk_server_script)]


def _install_everything() -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not installed: the server-everything integration tests need Node.js and npm")
    lock_path = Path(tempfile.gettempdir()) / "mcpsync-tests-npm-install.lock"
    # Parallel test processes (pytest-xdist) must not run two installs into one directory.
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (EVERYTHING_PACKAGE / "package.json").exists():
            return
        try:
            proc = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--prefix", str(NODE_DIR)],
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"npm ci in {NODE_DIR} did not finish within {NPM_TIMEOUT:.0f} s")
        if proc.returncode != 0:
            pytest.fail(f"npm ci in {NODE_DIR} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")


@pytest.fixture(scope="session")
def everything_server() -> list[str]:
    """Command line that serves ``@modelcontextprotocol/server-everything`` over stdio."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the server-everything integration tests need Node.js")
    if not (EVERYTHING_PACKAGE / "package.json").exists():
        _install_everything()
    # The package's bin (``mcp-server-everything``) is dist/index.js; its first argument picks
    # the transport.
    return [node, str(EVERYTHING_PACKAGE / "dist" / "index.js"), "stdio"]


# --------------------------------------------------------------------------- leak check


def _mcpsync_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("mcpsync-") and t.is_alive()}


def _child_processes() -> dict[int, str]:
    """Direct children of this process (zombies included: an unreaped child is a leak too)."""
    me = os.getpid()
    children: dict[int, str] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return children
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is parenthesised and may itself contain spaces or parentheses.
        name_end = stat.rfind(")")
        fields = stat[name_end + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            children[int(entry.name)] = f"{stat[stat.find('(') + 1 : name_end]} state={fields[0]}"
    return children


@pytest.fixture(autouse=True)
def _no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("allow_leaks"):
        yield
        return
    threads_before = _mcpsync_threads()
    children_before = set(_child_processes())
    yield
    deadline = time.monotonic() + LEAK_GRACE
    while True:
        threads = _mcpsync_threads() - threads_before
        children = {pid: desc for pid, desc in _child_processes().items() if pid not in children_before}
        if not threads and not children:
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        for thread in threads:
            thread.join(timeout=min(0.1, remaining))
        if not threads:
            time.sleep(0.05)
    problems = [f"thread {t.name!r} (daemon={t.daemon})" for t in sorted(threads, key=lambda t: t.name)]
    problems += [f"child process {pid} ({desc})" for pid, desc in sorted(children.items())]
    pytest.fail(f"test leaked after {LEAK_GRACE:.0f} s grace: " + "; ".join(problems), pytrace=False)


# --------------------------------------------------------------------------- callbacks


class Recorder:
    """Records callback invocations, with the calling thread's name, across threads.

    ``wait(n)`` blocks until ``n`` calls were recorded (an event, never a sleep) and fails the
    test after ``timeout`` seconds.
    """

    def __init__(self, result: object = None) -> None:
        self.calls: list[object] = []
        self.threads: list[str] = []
        self.result = result
        self._cond = threading.Condition()

    def __call__(self, *args: object) -> object:
        with self._cond:
            self.calls.append(args[0] if len(args) == 1 else args)
            self.threads.append(threading.current_thread().name)
            self._cond.notify_all()
        return self.result

    def wait(self, count: int = 1, timeout: float = 10.0) -> list[object]:
        """Block until at least ``count`` calls were recorded; return them all."""
        return self.wait_until(lambda calls: len(calls) >= count, timeout, f"{count} callback calls")

    def wait_until(
        self,
        predicate: Callable[[list[object]], bool],
        timeout: float = 10.0,
        what: str = "the expected callback calls",
    ) -> list[object]:
        """Block until ``predicate(calls)`` holds; return the calls."""
        with self._cond:
            if not self._cond.wait_for(lambda: predicate(self.calls), timeout=timeout):
                pytest.fail(f"expected {what} within {timeout} s, got {self.calls!r}"[:2000])
            return list(self.calls)


@pytest.fixture
def recorder() -> type[Recorder]:
    """The :class:`Recorder` class, for tests that collect callback invocations."""
    return Recorder


def assert_callback_thread(name: str) -> None:
    """User callbacks run on mcpsync's dispatcher/worker threads: not the caller, not the reader."""
    assert name != threading.current_thread().name
    assert name.startswith("mcpsync-"), name
    assert "reader" not in name, name


@pytest.fixture
def callback_thread_check() -> object:
    """:func:`assert_callback_thread`, as a fixture."""
    return assert_callback_thread


@pytest.fixture(autouse=True, scope="session")
def _private_era_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The CLI's era cache (mcpsync.client.era_cache) goes to a temp dir, not the user's ~/.cache."""
    saved = os.environ.get("MCPSYNC_ERA_CACHE")
    os.environ["MCPSYNC_ERA_CACHE"] = str(tmp_path_factory.mktemp("era-cache"))
    yield
    if saved is None:
        os.environ.pop("MCPSYNC_ERA_CACHE", None)
    else:
        os.environ["MCPSYNC_ERA_CACHE"] = saved
