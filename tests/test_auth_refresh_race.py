"""RELIABILITY F6: refresh-token rotation races across threads *and processes*.

A fake authorization server with strict rotation and family revocation (a
refresh token used twice revokes the whole family, as many real servers do)
also serves a protected resource.  8 processes x 16 threads share one
:class:`~mcpsync.auth.FileTokenStore` holding an expired access token: exactly
one refresh may reach the server, and every call must succeed.  A peer that
rotates without our lock must not make us wipe the tokens it saved.

Also here: the keyring store's lock directory checks, and the lazy
``mcpsync.testing.TokenStoreContract`` re-export.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
import requests

from mcpsync.auth import FileTokenStore, KeyringTokenStore, OAuth, TokenStoreError
from mcpsync.auth._discovery import canonical_resource

PROCESSES = 8
THREADS = 16


class FakeAS:
    """Token endpoint with strict rotation + a resource that accepts only the current token."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generation = 0
        self.used: set[str] = set()
        self.revoked = False
        self.refresh_calls = 0
        # Called (under no lock) before a refresh is answered; may return an error code.
        self.before_refresh: Callable[[str], str | None] | None = None

    def current(self) -> tuple[str, str]:
        return f"at{self.generation}", f"rt{self.generation}"

    def refresh(self, presented: str) -> tuple[int, dict[str, Any]]:
        injected = self.before_refresh(presented) if self.before_refresh else None
        with self.lock:
            self.refresh_calls += 1
            if injected:
                return 400, {"error": injected}
            _, rt = self.current()
            if self.revoked or presented != rt:
                if presented in self.used:
                    self.revoked = True  # reuse: the whole family dies
                return 400, {"error": "invalid_grant"}
            self.used.add(rt)
            self.generation += 1
            at, rt = self.current()
            return 200, {
                "access_token": at,
                "refresh_token": rt,
                "token_type": "Bearer",
                "expires_in": 3600,
            }

    def rotate_as_a_peer(self) -> dict[str, Any]:
        """What a peer outside our lock does: spend the refresh token itself."""
        with self.lock:
            self.used.add(self.current()[1])
            self.generation += 1
            at, rt = self.current()
        return {"access_token": at, "refresh_token": rt}

    def authorized(self, header: str | None) -> bool:
        with self.lock:
            return not self.revoked and header == f"Bearer {self.current()[0]}"


@pytest.fixture
def fake_as() -> Iterator[tuple[FakeAS, str]]:
    state = FakeAS()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: dict[str, Any], **headers: str) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/token":
                form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
                assert form.get("grant_type") == "refresh_token"
                self._reply(*state.refresh(form.get("refresh_token", "")))
            elif state.authorized(self.headers.get("Authorization")):
                self._reply(200, {"ok": True})
            else:
                self._reply(
                    401, {"error": "invalid_token"}, **{"WWW-Authenticate": "Bearer"}
                )

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 512  # 128 clients connect at once

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, name="fake-as", kwargs={"poll_interval": 0.05}
    )
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _seed(store: FileTokenStore, base: str, url: str) -> None:
    """An expired access token with a live refresh token, as a previous login left it."""
    store.save(
        canonical_resource(url),
        {
            "tokens": {
                "access_token": "at0",
                "refresh_token": "rt0",
                "token_type": "Bearer",
                "expires_at": time.time() - 60,
                "issuer": base,
                "resource": url,
                "scope": "mcp",
            },
            "clients": {
                base: {
                    "issuer": base,
                    "client_id": "cid",
                    "token_endpoint_auth_method": "none",
                    "source": "dcr",
                }
            },
            "server_metadata": {
                "issuer": base,
                "authorization_endpoint": base + "/authorize",
                "token_endpoint": base + "/token",
                "code_challenge_methods_supported": ["S256"],
            },
            "resource": url,
        },
    )


CHILD = textwrap.dedent("""
    import json, sys, threading
    import requests
    from mcpsync.auth import FileTokenStore, OAuth

    directory, url, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    auth = OAuth(store=FileTokenStore(directory), server_url=url, login=None)
    barrier = threading.Barrier(threads)
    results = []

    def call():
        try:
            barrier.wait(60)
            with requests.Session() as session:
                results.append(session.post(url, data=b"{}", auth=auth, timeout=60).status_code)
        except Exception as exc:
            results.append(type(exc).__name__)

    print("READY", flush=True)
    sys.stdin.readline()  # every process starts at once
    workers = [threading.Thread(target=call, name=f"race-{i}") for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(90)
    print(json.dumps(results), flush=True)
""")


@pytest.mark.timeout(180)
def test_eight_processes_times_sixteen_threads_make_one_refresh(
    fake_as: tuple[FakeAS, str], tmp_path: Path
) -> None:
    state, base = fake_as
    url = base + "/mcp"
    directory = tmp_path / "tokens"
    _seed(FileTokenStore(directory), base, url)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(directory), url, str(THREADS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=10)
    results = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    assert results == [[200] * THREADS] * PROCESSES
    assert state.refresh_calls == 1
    assert not state.revoked
    saved = FileTokenStore(directory).load(canonical_resource(url))
    assert saved is not None
    assert (saved["tokens"]["access_token"], saved["tokens"]["refresh_token"]) == (
        "at1",
        "rt1",
    )


@pytest.mark.timeout(30)
def test_a_peer_rotating_without_our_lock_does_not_make_us_wipe(
    fake_as: tuple[FakeAS, str], tmp_path: Path
) -> None:
    state, base = fake_as
    url = base + "/mcp"
    store = FileTokenStore(tmp_path / "tokens")
    _seed(store, base, url)
    key = canonical_resource(url)

    def peer(presented: str) -> str:
        # The peer wins the race: it spends rt0 and saves its tokens while our refresh
        # is in flight (it does not take our lock), so ours is refused.
        rotated = state.rotate_as_a_peer()
        record = store.load(key)
        assert record is not None
        record["tokens"].update(rotated, expires_at=time.time() + 3600)
        store.save(key, record)
        state.before_refresh = None
        return "invalid_grant"

    state.before_refresh = peer
    with requests.Session() as session:
        auth = OAuth(store=store, server_url=url, login=None)
        assert session.post(url, data=b"{}", auth=auth, timeout=20).status_code == 200
    assert state.refresh_calls == 1
    saved = store.load(key)
    assert saved is not None and saved["tokens"]["refresh_token"] == "rt1"


# -- the keyring store's lock directory ---------------------------------------------------------


@pytest.fixture
def lock_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No XDG_RUNTIME_DIR: the lock directory falls back to the (here: private) temp dir."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / f"mcpsync-{os.geteuid()}-locks"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX ownership")
def test_keyring_lock_dir_fallback_is_private(lock_tmp: Path) -> None:
    with KeyringTokenStore(service="t").lock("k"):
        pass
    assert lock_tmp.is_dir() and (lock_tmp.stat().st_mode & 0o777) == 0o700


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX ownership")
def test_keyring_lock_dir_planted_by_someone_else_is_refused(
    lock_tmp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "theirs"
    target.mkdir(mode=0o777)
    lock_tmp.symlink_to(target)
    with pytest.raises(TokenStoreError, match="symlink"), KeyringTokenStore().lock("k"):
        pass
    lock_tmp.unlink()
    lock_tmp.mkdir(mode=0o777)
    real = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: real + 1)  # as if another user made it
    with (
        pytest.raises(TokenStoreError, match="another user"),
        KeyringTokenStore().lock("k"),
    ):
        pass
    assert not list(lock_tmp.iterdir())  # no lock file was created in their directory


# -- mcpsync.testing re-export ------------------------------------------------------------------


def test_testing_reexports_the_contract_lazily() -> None:
    code = (
        "import sys, mcpsync.testing as t\n"
        "print(sorted(m for m in ('mcpsync.auth', 'mcpsync.testing.token_store', 'keyring')"
        " if m in sys.modules))\n"
        "from mcpsync.testing import TokenStoreContract\n"
        "from mcpsync.testing.token_store import TokenStoreContract as C\n"
        "print(TokenStoreContract is C)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert out.stdout.split("\n")[:2] == ["[]", "True"]
    with pytest.raises(AttributeError):
        import mcpsync.testing

        mcpsync.testing.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
