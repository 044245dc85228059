"""``manage.py runserver`` with its autoreloader: a reload or a stop leaves no MCP server process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.contrib_support import EXAMPLES, SERVER_MARKERS, LineWaiter, free_port, stubborn_config
from tests.test_contrib_gunicorn import _alive, _descendants

pytestmark = pytest.mark.timeout(120)


def _demo_servers(root: int) -> set[int]:
    return {pid for pid, cmd in _descendants(root).items() if any(m in cmd for m in SERVER_MARKERS)}


def _gone(pids: set[int], timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)  # not our children: poll the process table
    return True


@pytest.mark.parametrize("server", ["demo", "stubborn"])
def test_reload_and_stop_leave_no_server_process(server: str, tmp_path: Path) -> None:
    """The stubborn server ignores EOF on stdin: it is gone after a reload only if the app closed it."""
    # A settings module of our own, so the test can touch it to make the reloader restart.
    settings = tmp_path / "reload_settings.py"
    settings.write_text("from mcpsite.settings import *  # noqa: F401,F403\n")
    root = EXAMPLES / "django_app"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "reload_settings", "MCPSITE_DB": str(tmp_path / "db.sqlite3"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root), str(Path(__file__).resolve().parent.parent)]),
           "PYTHONUNBUFFERED": "1"}
    env.pop("MCP_URL", None)
    env.pop("MCP_CONFIG", None)
    if server == "stubborn":
        env["MCP_CONFIG"] = stubborn_config(tmp_path)
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(root / "manage.py"), "runserver", f"127.0.0.1:{port}"],
                            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    output = LineWaiter(proc.stdout)
    seen: set[int] = set()
    try:
        output.wait(r"Quit the server with")
        url = f"http://127.0.0.1:{port}/add?a=1&b=2"
        assert requests.get(url, timeout=30).json()["sum"] == 3.0
        first = _demo_servers(proc.pid)
        assert len(first) == 1
        seen |= first

        os.utime(settings, (time.time() + 5, time.time() + 5))  # a code change
        output.wait(r"Performing system checks")  # the reloader started a new process
        output.wait(r"Quit the server with")
        assert _gone(first), f"the reload left the old server running: {first}"
        assert requests.get(url, timeout=30).json()["sum"] == 3.0
        second = _demo_servers(proc.pid)
        assert len(second) == 1 and not second & first
        seen |= second
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole group
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()
    if server == "demo":
        assert _gone(seen), "runserver left a server process behind"
    else:
        # Ctrl-C: Django's reloader gives its child 0.25 s before SIGKILL, less than a close
        # takes (stdin closed, a grace, then SIGTERM), so only a server that exits at the end
        # of its stdin (as MCP asks, and as the demo does) is sure to stop.  docs/django.rst
        # says so; clean up what the stubborn one left.
        for pid in seen:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        assert _gone(seen)
