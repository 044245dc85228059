"""Token stores: the shared contract, file permissions and atomicity, keyring backends and chunking."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mcpsync.auth import (
    FileTokenStore,
    InsecureTokenStoreError,
    KeyringTokenStore,
    MemoryTokenStore,
    TokenStoreError,
)
from mcpsync.testing.token_store import BIG_RECORD, TokenStoreContract

pytestmark = pytest.mark.timeout(30)


class DictKeyring:
    """An in-memory keyring backend with Windows Credential Manager's 2,560-byte limit."""

    priority = 1

    def __init__(self) -> None:
        self.data: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.data.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        if len(password.encode("utf-16-le")) > 2560:
            raise RuntimeError("CredWrite: the stub exceeds the 2560-byte limit")
        self.data[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        del self.data[(service, username)]


@pytest.fixture
def dict_keyring(monkeypatch: pytest.MonkeyPatch) -> DictKeyring:
    import keyring

    backend = DictKeyring()
    monkeypatch.setattr(keyring, "get_keyring", lambda: backend)
    for name in ("get_password", "set_password", "delete_password"):
        monkeypatch.setattr(keyring, name, getattr(backend, name))
    return backend


class TestMemoryStore(TokenStoreContract):
    @pytest.fixture
    def store(self) -> MemoryTokenStore:
        return MemoryTokenStore()


class TestFileStore(TokenStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> FileTokenStore:
        return FileTokenStore(tmp_path / "tokens")


class TestKeyringStore(TokenStoreContract):
    @pytest.fixture
    def store(
        self, dict_keyring: DictKeyring, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> KeyringTokenStore:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
        return KeyringTokenStore(service="mcpsync-test")


def test_keyring_chunks_fit_the_windows_limit(
    dict_keyring: DictKeyring, tmp_path: Path
) -> None:
    store = KeyringTokenStore()
    big = dict(
        BIG_RECORD, noise=os.urandom(6000).hex()
    )  # incompressible: forces several chunks
    store.save("k", big)
    assert store.load("k") == big
    assert len(dict_keyring.data) > 2
    store.save("k", {"small": 1})  # the old chunks go
    assert len(dict_keyring.data) == 2
    store.delete("k")
    assert dict_keyring.data == {}


@pytest.mark.parametrize(
    "backend", ["keyring.backends.null.Keyring", "keyring.backends.fail.Keyring"]
)
def test_keyring_refuses_backends_that_do_not_store(
    backend: str, tmp_path: Path
) -> None:
    # In a subprocess: the backend is chosen from the environment at import.
    code = textwrap.dedent("""
        from mcpsync.auth import KeyringTokenStore, InsecureTokenStoreError
        try:
            KeyringTokenStore().save("k", {"a": 1})
        except InsecureTokenStoreError as exc:
            print("REFUSED", "FileTokenStore" in str(exc))
    """)
    env = dict(os.environ, PYTHON_KEYRING_BACKEND=backend)
    out = subprocess.run(  # noqa: PLW1510
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert out.stdout.strip() == "REFUSED True", out.stderr


def test_keyring_refuses_an_empty_chainer() -> None:
    class ChainerBackend:
        backends: list[Any] = []  # noqa: RUF012

    with pytest.raises(InsecureTokenStoreError):
        KeyringTokenStore._check_backend(ChainerBackend())


def test_importing_auth_does_not_import_keyring() -> None:
    code = "import sys, mcpsync, mcpsync.auth; print('keyring' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        timeout=20,
    )
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_file_store_permissions_under_a_loose_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store = FileTokenStore(tmp_path / "d")
        store.save("k", {"a": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "d").st_mode) == 0o700
    (file,) = (tmp_path / "d").glob("*.json")
    assert stat.S_IMODE(os.stat(file).st_mode) == 0o600
    assert not list((tmp_path / "d").glob(".tmp-*"))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_file_store_refuses_readable_files_and_symlinks(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "d")
    store.save("k", {"a": 1})
    (file,) = (tmp_path / "d").glob("*.json")
    os.chmod(file, 0o644)
    with pytest.raises(TokenStoreError, match="chmod 600"):
        store.load("k")
    os.unlink(file)
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    os.symlink(target, file)
    with pytest.raises(TokenStoreError, match="symlink"):
        store.load("k")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_file_store_tightens_its_own_loose_directory(tmp_path: Path) -> None:
    directory = tmp_path / "d"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    FileTokenStore(directory).save("k", {"a": 1})
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


def test_file_store_rejects_garbage(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    store.save("k", {"a": 1})
    (file,) = tmp_path.glob("*.json")
    file.write_text("{not json")
    os.chmod(file, 0o600)
    with pytest.raises(TokenStoreError, match="not valid JSON"):
        store.load("k")


def test_file_store_lock_excludes_other_processes(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    code = textwrap.dedent(f"""
        import time
        from mcpsync.auth import FileTokenStore
        s = FileTokenStore({str(tmp_path)!r})
        t = time.monotonic()
        with s.lock("k"):
            print("GOT")
    """)
    with store.lock("k"):
        proc = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
        )
        try:
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(1.0)  # blocked on our lock
        except BaseException:
            proc.kill()
            raise
    out, _ = proc.communicate(timeout=20)
    assert out.strip() == "GOT"
