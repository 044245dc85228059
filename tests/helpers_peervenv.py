"""A separate venv for test peers whose pins clash with the test venv (fastmcp-tasks).

Like ``npm ci`` for server-everything in ``conftest.py``: built on first use from the
pinned lists in ``tests/peers/``, reused while those lists are unchanged (a stamp file
holds their hash), bounded in time, serialised between parallel test processes, and
a failure is a test error (never a skip), so CI on a fresh machine builds it too.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "tests" / "peers"
VENV = ROOT / ".peer-venv"
#: Bound on building the venv: about 30 s here; a hung index must not hang CI.
INSTALL_TIMEOUT = 600.0
_STAMP = ".mcpsync-peers"


def _digest() -> str:
    h = hashlib.sha256()
    for path in sorted(PEERS.glob("*.txt")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _run(args: list[str], what: str) -> None:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} did not finish within {INSTALL_TIMEOUT:.0f} s")
    if proc.returncode != 0:
        pytest.fail(f"{what} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}")


def peer_python() -> str:
    """The interpreter of the peer venv, built (or rebuilt after a pin change) if needed."""
    python = VENV / "bin" / "python"
    stamp = VENV / _STAMP
    digest = _digest()
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return str(python)
    lock_path = Path(tempfile.gettempdir()) / "mcpsync-tests-peer-venv.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.exists() and stamp.exists() and stamp.read_text() == digest:
            return str(python)
        if VENV.exists():
            shutil.rmtree(VENV)
        # The base interpreter, not the test venv's: the peer must not see mcpsync's packages.
        base = getattr(sys, "_base_executable", sys.executable)
        _run([base, "-m", "venv", str(VENV)], f"creating {VENV}")
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        _run([*pip, "-r", str(PEERS / "fastmcp-tasks-deps.txt")], "installing the fastmcp-tasks dependencies")
        _run([*pip, "--no-deps", "-r", str(PEERS / "fastmcp-tasks.txt")], "installing fastmcp-tasks")
        stamp.write_text(digest)
    return str(python)
