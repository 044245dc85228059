"""Fixtures for the auth end-to-end tests: a real authorization server and a protected MCP server.

* ``auth_server``: oidc-provider (``server.mjs``) on 127.0.0.1, installed from
  ``package-lock.json`` with ``npm ci`` the first time (like ``tests/conftest.py``
  does for the other Node peers).  Yields the issuer URL.
* ``resource_server``: ``resource_server.py`` (official SDK + token check) for that
  issuer.  Yields the MCP endpoint URL.
* ``ts_sdk_server``: ``ts_server.mjs``, the TypeScript SDK's own authorization
  server (``mcpAuthRouter``) and an SDK MCP server behind its ``requireBearerAuth``.
  Yields the MCP endpoint URL; ``/test/stats`` on the same origin has the counters.
* :func:`sdk_bearer_server`: ``sdk_bearer_server.py``, the official SDK's own Bearer-only
  auth middleware for that issuer (no DPoP); ``/test/seen`` lists the headers it got.
* :func:`oidc_provider` and :func:`protected_server`: the same two peers as
  context managers taking command-line options (``--dpop-nonce``, ...), for
  tests that need them configured otherwise.
* :func:`browse`: a headless "user with a browser" that walks the authorization
  URL through the server's (auto-approving) login and consent pages and returns
  the final redirect to the client's ``redirect_uri``.

Import these fixtures into a test module with ``from tests.auth_server.conftest_auth import *``.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import urljoin, urlsplit

import pytest
import requests

__all__ = [
    "auth_server",
    "browse",
    "follow_to_callback",
    "oidc_provider",
    "protected_server",
    "resource_server",
    "sdk_bearer_server",
    "start_peer",
    "stop_peer",
    "ts_sdk_server",
]

HERE = Path(__file__).resolve().parent
NPM_TIMEOUT = 300.0
START_TIMEOUT = 30.0


PACKAGES = ("oidc-provider", "@modelcontextprotocol/sdk")


def _installed() -> bool:
    return all((HERE / "node_modules" / name).is_dir() for name in PACKAGES)


def _install() -> None:
    if _installed():
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(
            "npm is not installed: the auth end-to-end tests need Node.js and npm"
        )
    lock_path = Path(tempfile.gettempdir()) / "mcpsync-tests-auth-npm.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test runs install once
        if _installed():
            return
        try:
            proc = subprocess.run(  # noqa: PLW1510
                [npm, "ci", "--no-audit", "--no-fund", "--prefix", str(HERE)],
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"npm ci in {HERE} did not finish within {NPM_TIMEOUT:.0f} s")
        if proc.returncode != 0:
            pytest.fail(
                f"npm ci in {HERE} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
            )


def start_peer(argv: list[str], cwd: Path) -> tuple[subprocess.Popen[str], int]:
    """Start a server that prints ``PORT=<n>``; stdin stays open so it exits with the test."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        while True:
            if not sel.select(START_TIMEOUT):
                raise RuntimeError(
                    f"{argv[1]} did not start within {START_TIMEOUT:.0f} s"
                )
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(
                    f"{argv[1]} exited before listening (code {proc.wait(5)})"
                )
            if line.startswith("PORT="):
                return proc, int(line.strip()[5:])
    except BaseException:
        stop_peer(proc)
        raise
    finally:
        sel.close()


def stop_peer(proc: subprocess.Popen[Any]) -> None:
    stdin: IO[Any] | None = proc.stdin
    if stdin is not None:
        stdin.close()
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the auth end-to-end tests need Node.js and npm")
    return node


@contextlib.contextmanager
def oidc_provider(*options: str) -> Iterator[str]:
    """oidc-provider (``server.mjs``) with *options*; the issuer URL."""
    _install()
    proc, port = start_peer([_node(), "server.mjs", *options], HERE)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_peer(proc)


@contextlib.contextmanager
def protected_server(issuer: str, *options: str) -> Iterator[str]:
    """``resource_server.py`` for *issuer* with *options*; the MCP endpoint URL."""
    proc, port = start_peer(
        [sys.executable, "resource_server.py", "--issuer", issuer, *options], HERE
    )
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_peer(proc)


@contextlib.contextmanager
def sdk_bearer_server(issuer: str) -> Iterator[str]:
    """``sdk_bearer_server.py`` (the official SDK's Bearer-only auth) for *issuer*; the MCP endpoint URL."""
    proc, port = start_peer([sys.executable, "sdk_bearer_server.py", "--issuer", issuer], HERE)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_peer(proc)


@pytest.fixture
def auth_server() -> Iterator[str]:
    with oidc_provider() as issuer:
        yield issuer


@pytest.fixture
def resource_server(auth_server: str) -> Iterator[str]:
    with protected_server(auth_server) as url:
        yield url


@pytest.fixture
def ts_sdk_server() -> Iterator[str]:
    _install()
    proc, port = start_peer([_node(), "ts_server.mjs"], HERE)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_peer(proc)


def follow_to_callback(url: str, *, limit: int = 20) -> str:
    """Walk the authorization server's redirects (login, consent) with cookies; the callback URL."""
    with requests.Session() as browser:
        origin = urlsplit(url)[:2]
        current = url
        for _ in range(limit):
            response = browser.get(current, allow_redirects=False, timeout=10)
            location = response.headers.get("Location")
            if response.status_code not in (302, 303) or not location:
                raise AssertionError(
                    f"authorization server answered {response.status_code} at {current}"
                )
            current = urljoin(current, location)
            if urlsplit(current)[:2] != origin:
                return current
    raise AssertionError("too many redirects at the authorization server")


def browse(url: str) -> bool:
    """An ``open_browser`` for :class:`mcpsync.auth.LoopbackLogin`: log in and hit the loopback callback."""
    callback = follow_to_callback(url)
    requests.get(callback, timeout=10)
    return True
