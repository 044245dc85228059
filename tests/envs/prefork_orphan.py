"""A server must not outlive a pool process that used a module-level client.

A process of a ``multiprocessing`` fork pool (as of a Celery prefork pool) ends with
``os._exit()``: atexit hooks, where mcpsync closes the servers a process started, do not run
there.  A server that exits on its stdin's EOF goes anyway; one that ignores EOF
(``tests/servers/stubborn_server.py``, like some real servers) is ended by the process's
server guardian (mcpsync/transports/stdio/reaper.py) once the pool process is gone.

Run: ``python tests/envs/prefork_orphan.py`` (tests/test_process_life.py does); it prints the
servers left running 3 s after their pool process exited, kills them, and exits 1 if any was.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path

import mcpsync

STUBBORN = Path(__file__).resolve().parent.parent / "servers" / "stubborn_server.py"
client = mcpsync.Client.stdio([sys.executable, str(STUBBORN)], timeout=20)


def server_pid(_: int) -> int:
    client.call_tool("add", {"a": 1, "b": 2})
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    return int(children[0])


if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(1) as pool:
        pids = pool.map(server_pid, range(1))
        pool.close()
        pool.join()  # the pool process exits normally (os._exit after its work loop)
    time.sleep(3)
    left = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    print(f"servers left running after their pool process exited: {left}")
    sys.exit(1 if left else 0)
