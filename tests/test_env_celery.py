"""A module-level stdio client in Celery 5 tasks, on a real worker, per pool (issue 25).

``tests/envs/celery_app.py`` is the worker's app: kombu's filesystem transport (no broker server),
a module-level :class:`mcpsync.Client` for ``tests/servers/stubborn_server.py`` (it ignores its
stdin's EOF: gone at the end means the client closed it), and one task that calls a tool.  This
test is the producer.  Per pool (``prefork``, ``threads``, ``gevent``, each ``-c 2``): the tasks'
results are right, two tasks ran at the same time, each pool process (prefork) or the one worker
process (threads, gevent) has one server, and a warm shutdown (SIGTERM) ends the worker with exit
code 0 and leaves no server process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_contrib_gunicorn import _proc_table
from test_env_uwsgi import gone, servers_under, stop

from tests.envs.celery_conf import make_app

ROOT = Path(__file__).resolve().parent.parent
ENVS = ROOT / "tests" / "envs"

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("pool", ["prefork", "threads", "gevent"])
def test_tasks_call_tools_and_a_warm_shutdown_leaves_no_server(pool: str, tmp_path: Path) -> None:
    # Not DJANGO_SETTINGS_MODULE, which other tests of this process set: Celery would load Django.
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(MCP_ENV_DIR=str(tmp_path), PYTHONPATH=f"{ENVS}{os.pathsep}{ROOT}")
    argv = [sys.executable, "-m", "celery", "-A", "celery_app", "worker", "-P", pool, "-c", "2", "-l", "INFO",
            "--without-heartbeat", "--without-mingle", "--without-gossip"]
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        worker = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
    try:
        app = make_app(tmp_path)
        sent = [app.send_task("mcp.call", args=("countdown", {"n": 1, "delay": 1.0})) for _ in range(4)]
        sent.append(app.send_task("mcp.call", args=("add", {"a": 2, "b": 3})))
        deadline = time.monotonic() + 90
        while not all(r.ready() for r in sent):  # polled, so a worker that died fails at once
            assert worker.poll() is None, f"the worker exited ({worker.returncode}):\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no results within 90 s:\n{log.read_text()[-3000:]}"
            time.sleep(0.1)
        results = [r.get(timeout=5) for r in sent]
        assert [r["text"] for r in results] == ["Liftoff!"] * 4 + ["5"], results
        pids = {r["pid"] for r in results}
        if pool == "prefork":  # the pool processes, never the main one
            assert len(pids) == 2 and worker.pid not in pids, (worker.pid, pids)
        else:
            assert pids == {worker.pid}, (worker.pid, pids)
        runs = sorted((r["start"], r["end"]) for r in results)
        assert any(b[0] < a[1] for a, b in zip(runs, runs[1:])), f"no two tasks ran at once: {runs}"
        servers = servers_under(worker.pid)
        assert {_proc_table()[pid][0] for pid in servers} == pids, (servers, pids)
        stop(worker)  # SIGTERM: a warm shutdown
        assert worker.returncode == 0, log.read_text()[-3000:]
    finally:
        stop(worker)  # after a failure: SIGTERM, then SIGKILL for it and its servers
    assert "Warm shutdown" in log.read_text()
    left = gone(servers, 15)
    assert not left, f"server processes outlived the worker: {left}"
