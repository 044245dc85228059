"""A throwaway PostgreSQL server for the tests: ``initdb`` in a temporary directory, a Unix socket only.

It listens on no TCP port (a socket in its own directory: no port to collide
with), runs as the ``postgres`` user when the tests run as root (the server
refuses root), and is stopped and removed by the fixture that started it.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.contrib_support import LineWaiter

BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for directory in BIN_DIRS:
        if (directory / name).exists():
            return str(directory / name)
    return None


def available() -> str | None:
    """Why no server can be started here (``None``: one can)."""
    if _binary("initdb") is None or _binary("postgres") is None:
        return "PostgreSQL's initdb/postgres are not installed (Debian: apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (the test extra has it)"
    return None


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; its SQLAlchemy URL (database ``postgres``, user ``postgres``)."""
    initdb, postgres = _binary("initdb"), _binary("postgres")
    assert initdb and postgres
    root = Path(tempfile.mkdtemp(prefix="mcpsync-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(root, user.pw_uid, user.pw_gid)
        prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", "--"]
    data, sockets = root / "data", root
    proc = None
    try:
        subprocess.run([*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
        proc = subprocess.Popen(
            [*prefix, postgres, "-D", str(data), "-k", str(sockets), "-c", "listen_addresses=",
             "-c", "fsync=off", "-c", "max_connections=40"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        LineWaiter(proc.stderr).wait("ready to accept connections", timeout=60)
        yield f"postgresql+psycopg://postgres@/postgres?host={sockets}"
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)  # "fast shutdown": ends the sessions, exits
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            assert proc.stderr is not None
            proc.stderr.close()
        shutil.rmtree(root, ignore_errors=True)
