"""Helpers for tests that spawn real processes: leak checks and liveness sockets.

* :func:`snapshot` / :func:`assert_no_leaks`: threads named ``mcpsync-*``,
  direct child processes (zombies count) and the fd count of this process.
* :class:`LivenessListener`: a TCP listener on 127.0.0.1 that processes of the
  fault server connect to; a process is dead when its socket reaches EOF
  (observed from outside, not from the client's own bookkeeping).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from mcpsync.transports.stdio import reaper


def mcpsync_threads() -> set[str]:
    """Names of live threads whose name starts with ``mcpsync-``."""
    return {t.name for t in threading.enumerate() if t.name.startswith("mcpsync-") and t.is_alive()}


def child_pids() -> set[int]:
    """Direct children of this process, zombies included."""
    me, found = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.add(int(entry.name))
    return found


def fd_count() -> int:
    """How many file descriptors this process has open, the stdio server guardian's socket aside.

    The first stdio server of a process opens that socket and it lives as long as the
    process (``mcpsync/transports/stdio/reaper.py``): it is no leak of the test that came first.
    """
    guardian = reaper._sock
    return len(os.listdir("/proc/self/fd")) - (guardian is not None and guardian.fileno() >= 0)


def process_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` (``"Z"`` for a zombie), or ``None`` if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()[0]


@dataclass
class Snapshot:
    threads: set[str] = field(default_factory=set)
    children: set[int] = field(default_factory=set)
    fds: int = 0


def snapshot() -> Snapshot:
    """Record threads, children and fd count now."""
    return Snapshot(mcpsync_threads(), child_pids(), fd_count())


def assert_no_leaks(before: Snapshot, timeout: float = 5.0) -> None:
    """Fail unless threads, children and fds are back to ``before`` within ``timeout``.

    Polls briefly: a closed transport joins its threads, but a thread's exit
    and a process's reaping are observed asynchronously on a loaded machine.
    """
    deadline = time.monotonic() + timeout
    while True:
        threads = mcpsync_threads() - before.threads
        children = child_pids() - before.children
        fds = fd_count()
        if not threads and not children and fds <= before.fds:
            return
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"leaked: threads={sorted(threads)} children={sorted(children)} "
                f"fds {before.fds} -> {fds}"
            )
        time.sleep(0.05)


class LivenessListener:
    """Accepts liveness connections; tracks which roles are connected and which closed."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.port: int = self._sock.getsockname()[1]
        self._cond = threading.Condition()
        self.connected: dict[str, int] = {}  # "role pid" -> pid
        self.closed: set[str] = set()
        self._conns: list[socket.socket] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        t = threading.Thread(target=self._accept, name="test-liveness-accept", daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(0.2)
            self._conns.append(conn)
            t = threading.Thread(target=self._watch, args=(conn,), name="test-liveness-conn", daemon=True)
            t.start()
            self._threads.append(t)

    def _watch(self, conn: socket.socket) -> None:
        data, key = b"", None
        while not self._stop.is_set():
            try:
                chunk = conn.recv(256)
            except TimeoutError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                break
            data += chunk
            if key is None and b"\n" in data:
                key = data.split(b"\n", 1)[0].decode()
                with self._cond:
                    self.connected[key] = int(key.split()[1])
                    self._cond.notify_all()
        with self._cond:
            if key is not None:
                self.closed.add(key)
            self._cond.notify_all()

    def roles(self) -> list[str]:
        with self._cond:
            return sorted(k.split()[0] for k in self.connected)

    def wait_connected(self, count: int, timeout: float = 10.0) -> dict[str, int]:
        """Wait until ``count`` processes have connected; return ``{"role pid": pid}``."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.connected) >= count, timeout):
                raise AssertionError(f"only {sorted(self.connected)} connected within {timeout} s")
            return dict(self.connected)

    def wait_all_closed(self, timeout: float) -> bool:
        """Whether every connected process's socket reached EOF within ``timeout``."""
        with self._cond:
            return self._cond.wait_for(lambda: set(self.connected) <= self.closed, timeout)

    def open_roles(self) -> list[str]:
        with self._cond:
            return sorted(set(self.connected) - self.closed)

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        for t in self._threads:
            t.join(2.0)
        for conn in self._conns:
            conn.close()

    def __enter__(self) -> LivenessListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
