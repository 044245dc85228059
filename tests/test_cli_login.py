# ruff: noqa: F811  (fixtures imported from tests/auth_server/conftest_auth.py)
"""``mcpsync login`` / ``logout`` against the real OAuth setup of the auth end-to-end tests.

The "browser" is this file run as a script: ``mcpsync login`` opens the
authorization URL with :mod:`webbrowser`, which honours ``$BROWSER``; the
script walks oidc-provider's login and consent pages and hits the loopback
callback, as a user would.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":  # the browser: log in at the URL given
    sys.path.insert(0, str(ROOT))
    from tests.auth_server.conftest_auth import browse

    browse(sys.argv[1])
    sys.exit(0)

from tests.auth_server.conftest_auth import auth_server, resource_server  # noqa: F401

pytestmark = pytest.mark.timeout(120)


def run(*argv: str, store: Path, browser: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCPSYNC_TOKEN_STORE": str(store)}
    env["BROWSER"] = (
        f"{shlex.quote(sys.executable)} {shlex.quote(__file__)} %s" if browser else "false"
    )
    return subprocess.run(  # noqa: PLW1510 - the exit status is asserted
        [sys.executable, "-m", "mcpsync", *argv], capture_output=True, text=True, timeout=90,
        env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
    )


def test_login_then_commands_use_the_saved_tokens_then_logout(
    resource_server: str, tmp_path: Path
) -> None:
    store = tmp_path / "tokens"
    # Not logged in, not interactive: one line, exit 6, no waiting for a browser.
    proc = run("--url", resource_server, "call", "whoami", store=store, browser=False)
    assert proc.returncode == 6, proc.stderr
    assert "needs a login: run `mcpsync --url" in proc.stderr

    proc = run("--url", resource_server, "login", "--login-timeout", "60", store=store, browser=True)
    assert proc.returncode == 0, proc.stderr
    assert f"Logged in to {resource_server}" in proc.stdout
    assert len(list(store.glob("*.json"))) == 1
    assert oct(next(store.glob("*.json")).stat().st_mode & 0o777) == "0o600"

    proc = run("--url", resource_server, "call", "whoami", store=store, browser=False)
    assert (proc.returncode, proc.stdout) == (0, "alice\n"), proc.stderr

    proc = run("--url", resource_server, "logout", store=store, browser=False)
    assert proc.returncode == 0 and "Logged out" in proc.stdout
    proc = run("--url", resource_server, "call", "whoami", store=store, browser=False)
    assert proc.returncode == 6


def test_login_needs_an_http_server(tmp_path: Path) -> None:
    proc = run("--stdio", "python -m mcpsync.demo", "login", store=tmp_path, browser=False)
    assert proc.returncode == 2 and "login and logout are for HTTP servers" in proc.stderr
