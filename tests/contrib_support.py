"""Shared set-up for the contrib tests: the demo entry, the Django example site, a restartable MCP server.

Also for any test: :func:`free_port` and :func:`require` (a peer the test cannot run without).
"""

from __future__ import annotations

import json
import os
import re
import selectors
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.auth_server.conftest_auth import HERE as AUTH_DIR
from tests.auth_server.conftest_auth import start_peer, stop_peer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO: dict[str, Any] = {"command": sys.executable, "args": ["-m", "mcpsync.demo"]}
#: The demo server that exits only on a signal (tests/servers/stubborn_server.py).
STUBBORN: dict[str, Any] = {
    "command": sys.executable,
    "args": [str(Path(__file__).resolve().parent / "servers" / "stubborn_server.py")],
}
#: What the command line of a demo or stubborn server process contains.
SERVER_MARKERS = ("mcpsync.demo", "stubborn_server.py")


def stubborn_config(directory: Path, **more: Any) -> str:
    """An mcpServers file whose ``demo`` entry is the stubborn server (and *more* entries); its path."""
    path = directory / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"demo": STUBBORN, **more}}))
    return str(path)


def free_port() -> int:
    """A 127.0.0.1 port that was free a moment ago (nothing listens there now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def require(reason: str | None) -> None:
    """Go on when there is no *reason* not to; else fail under CI (``CI=true``: the machine image
    has what the test needs, so CI must run it) and skip elsewhere, saying *reason*."""
    __tracebackhide__ = True  # report the caller's line, as when it skipped or failed itself
    if not reason:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


#: A fixed key for the tests' encrypted stores (never a real secret).
TEST_KEY = "x1cpqLhHvwvZ8nkL9JV1Fj4fYhBn3mHFZcw2D8ZqjDc="


def django_site(db_path: Path) -> None:
    """Set up Django with the example site's settings and a fresh database (once per process)."""
    import django
    from django.apps import apps

    if apps.ready:
        return
    root = str(EXAMPLES / "django_app")
    if root not in sys.path:
        sys.path.insert(0, root)
    os.environ["DJANGO_SETTINGS_MODULE"] = "mcpsite.settings"
    os.environ.setdefault("MCPSITE_DB", str(db_path))
    os.environ["MCPSITE_DEMO_LOGIN"] = "1"
    os.environ.setdefault("MCP_TOKEN_KEY", TEST_KEY)
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def remote_entry(url: str, name: str = "test-app") -> dict[str, Any]:
    return {"url": url, "oauth": {"client_name": name}}


class RestartableResourceServer:
    """``tests/auth_server/resource_server.py`` that can be stopped and started again on its port."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.port = 0
        self.proc: Any = None

    def start(self) -> str:
        argv = [sys.executable, "resource_server.py", "--issuer", self.issuer]
        if self.port:
            argv += ["--port", str(self.port)]
        self.proc, self.port = start_peer(argv, AUTH_DIR)
        return self.url

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        if self.proc is not None:
            stop_peer(self.proc)
            self.proc = None


def restartable(issuer: str) -> Iterator[RestartableResourceServer]:
    server = RestartableResourceServer(issuer)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class LineWaiter:
    """Waits for a line matching a pattern on a child's output pipe, bounded in time.

    It reads the raw file descriptor (``os.read``), so lines that arrived
    together are never stuck in a Python buffer that ``select`` cannot see.
    """

    def __init__(self, pipe: Any) -> None:
        self._fd = pipe.fileno()
        self._pending = b""
        #: Every line read so far (for failure messages).
        self.log: list[str] = []

    def wait(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(self._fd, selectors.EVENT_READ)
            while True:
                while b"\n" in self._pending:
                    raw, self._pending = self._pending.split(b"\n", 1)
                    line = raw.decode(errors="replace")
                    self.log.append(line)
                    found = re.search(pattern, line)
                    if found:
                        return found
                if not sel.select(max(0.0, deadline - time.monotonic())):
                    raise AssertionError(f"no line matching {pattern!r}:\n" + "\n".join(self.log))
                chunk = os.read(self._fd, 65536)
                if not chunk:
                    raise AssertionError(f"the process exited before {pattern!r}:\n" + "\n".join(self.log))
                self._pending += chunk
