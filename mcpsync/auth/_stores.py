"""Token stores: where tokens, client registrations and discovered metadata live.

A store keeps one JSON-able ``dict`` ("record") per key; :class:`~mcpsync.auth.OAuth`
uses the MCP server's canonical URL as the key.  Every store also offers
:meth:`TokenStore.lock`, which :class:`~mcpsync.auth.OAuth` holds around
read-refresh-write so that threads *and processes* sharing a store spend a
rotating refresh token once (RELIABILITY F6).

Stores never put secrets in their ``repr`` or in exception text.
"""

from __future__ import annotations

import abc
import base64
import contextlib
import hashlib
import json
import os
import stat
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import _deadline
from ._errors import InsecureTokenStoreError, TokenStoreError
from ._http import json_object


class TokenStore(abc.ABC):
    """Where :class:`~mcpsync.auth.OAuth` keeps its state (abstract).

    Subclasses implement :meth:`load` and :meth:`save`, and usually
    :meth:`delete` and :meth:`lock`.  ``mcpsync.testing.token_store.TokenStoreContract``
    is a test class every implementation should pass.
    """

    def __init__(self) -> None:
        self._thread_locks: dict[str, threading.RLock] = {}

    @abc.abstractmethod
    def load(self, key: str) -> dict[str, Any] | None:
        """The record saved under *key*, or ``None``."""

    @abc.abstractmethod
    def save(self, key: str, record: dict[str, Any]) -> None:
        """Replace the record under *key* (atomically: readers see old or new, never half)."""

    def delete(self, key: str) -> None:
        """Forget *key* (no error when it is absent)."""
        raise NotImplementedError(f"{type(self).__name__} cannot delete")

    def _lock_file(self, key: str) -> Path | None:
        """The file locked across processes for *key* besides the thread lock (``None``: none)."""
        return None

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold an exclusive lock on *key* (this process only; file-backed stores lock across processes)."""
        path = self._lock_file(key)
        thread_lock = self._thread_locks.setdefault(key, threading.RLock())  # one dict operation: atomic
        with _held(thread_lock), (_file_lock(path) if path else contextlib.nullcontext()):
            yield

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class MemoryTokenStore(TokenStore):
    """Keeps records in this process only (tests, short scripts, per-request web use)."""

    def __init__(self) -> None:
        super().__init__()
        self._data: dict[str, str] = {}

    def load(self, key: str) -> dict[str, Any] | None:
        return None if (found := self._data.get(key)) is None else json.loads(found)

    def save(self, key: str, record: dict[str, Any]) -> None:
        self._data[key] = json.dumps(record)  # the same contract as the persistent stores: JSON only

    def delete(self, key: str) -> None:
        self._data.pop(key, None)  # one dict operation: atomic, as load and save are


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An advisory exclusive lock on a file, across processes (flock / msvcrt)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows CI only
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
        else:
            _flock(fd)
        yield
    finally:
        os.close(fd)  # closing releases the lock on every platform


def _held(lock: threading.RLock) -> contextlib.AbstractContextManager[None]:
    """Hold *lock*, waiting at most what is left of the calling request's deadline."""
    return _deadline.held(lock, "waiting for the token store's lock")


_FLOCK_POLL = 0.02


def _flock(fd: int) -> None:
    """Lock *fd* exclusively; within a request's deadline, poll so the wait ends by it."""
    import fcntl

    blocking = _deadline.current() is None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if _deadline.passed():
                raise _deadline.expired("waiting for another process's token refresh") from None
            time.sleep(_deadline.capped(_FLOCK_POLL))


def _json_object(raw: bytes, what: str, damaged: str) -> dict[str, Any]:
    """The JSON object a store kept in *raw*."""
    if (record := json_object(raw)) is None:
        raise TokenStoreError(f"{what} {damaged}")
    return record


def _key_name(key: str) -> str:
    # Hashing keeps URLs (slashes, colons) out of file names and file names short.
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]


def _private_dir(directory: Path, what: str) -> None:
    """Create *directory* (0700) or check an existing one is ours and private.

    A directory in a shared place (``/tmp``) may have been made in advance by
    another user, to read our files, swap them or hold our locks forever: refuse
    a symlink, a non-directory or another owner; tighten our own loose one.
    """
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(directory)
    except OSError as exc:
        raise TokenStoreError(f"cannot create {what} {directory}: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise TokenStoreError(f"{what} {directory} is a symlink or not a directory")
    if _shared(info, f"{what} {directory}"):
        os.chmod(directory, 0o700)  # ours, but too open (an old umask-made directory): tighten it


def _shared(info: os.stat_result, what: str) -> bool:
    """Whether *what* (ours: another user's is refused) is open to group or world."""
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        raise TokenStoreError(f"{what} belongs to another user; remove it or choose another place")
    return sys.platform != "win32" and bool(stat.S_IMODE(info.st_mode) & 0o077)


class FileTokenStore(TokenStore):
    """JSON files in a private directory: the store for servers without a keyring.

    The directory is created with mode 0700, each file with 0600 (whatever the
    umask), written to a temporary file, ``fsync``-ed and renamed into place,
    so a crash leaves the old or the new file, never a torn one.  Symlinks,
    files owned by another user and group/world-accessible files are refused
    (as ``ssh`` refuses a readable private key).

    :param directory: where the files go, e.g. ``~/.config/my-app/tokens``.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__()
        self.directory = Path(directory).expanduser()
        self._prepared = False

    def __repr__(self) -> str:
        return f"<FileTokenStore {str(self.directory)!r}>"

    def _path(self, key: str, suffix: str = ".json") -> Path:
        """Where *key*'s record (or lock) is, in the directory made or checked at first use."""
        if not self._prepared:
            _private_dir(self.directory, "token directory")
            self._prepared = True
        return self.directory / (_key_name(key) + suffix)

    def load(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise TokenStoreError(f"cannot open token file {path} (a symlink?): {exc.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            if _shared(os.fstat(handle.fileno()), what := f"token file {path}"):
                raise TokenStoreError(f"{what} is readable by other users; remove it or run `chmod 600 {path}`")
            raw = handle.read()
        return _json_object(raw, what, "is not valid JSON (an object); delete it to log in again")

    def save(self, key: str, record: dict[str, Any]) -> None:
        path = self._path(key)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.directory)  # mkstemp creates 0600
        try:
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), 0o600) if hasattr(os, "fchmod") else None
                handle.write(json.dumps(record, separators=(",", ":")).encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable
            dfd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(key))

    def _lock_file(self, key: str) -> Path:
        return self._path(key, ".lock")


# Windows Credential Manager caps a secret at 2,560 bytes and keyring stores it
# as UTF-16, so 1,000 ASCII characters per entry leaves room to spare.
_CHUNK = 1000
_BAD_BACKENDS = {
    "keyring.backends.fail": "no keyring backend is available (headless system?)",
    "keyring.backends.null": "the null keyring backend stores nothing",
    "keyrings.alt.file": "the keyrings.alt file backend stores secrets in a plaintext or weakly encrypted file",
}
_REMEDY = ("use mcpsync.auth.FileTokenStore(directory) instead (0600 files), or install and unlock a "
           "real keyring (Secret Service, macOS Keychain, Windows Credential Manager)")


class KeyringTokenStore(TokenStore):
    """Records in the operating system's keyring (needs the ``keyring`` package).

    Records are compressed and split into entries of at most 1,000
    characters, so they fit Windows Credential Manager's 2,560-byte limit.  A
    keyring that would not keep them (the ``fail`` or ``null`` backends, a
    chainer without a real backend, the plaintext ``keyrings.alt`` backends)
    raises :class:`~mcpsync.auth.InsecureTokenStoreError` on first use.

    :param service: the keyring "service" name the entries are filed under.
    """

    def __init__(self, service: str = "mcpsync") -> None:
        super().__init__()
        self.service = service
        self._checked = False
        self._lock_dir: Path | None = None

    def __repr__(self) -> str:
        return f"<KeyringTokenStore service={self.service!r}>"

    def _keyring(self) -> Any:
        try:
            import keyring
        except ImportError:
            raise TokenStoreError(f"KeyringTokenStore needs the keyring package (pip install keyring); or {_REMEDY}"
                                  ) from None
        if not self._checked:
            self._check_backend(keyring.get_keyring())
            self._checked = True
        return keyring

    @staticmethod
    def _check_backend(backend: Any) -> None:
        backends = getattr(backend, "backends", None)
        if type(backend).__name__ == "ChainerBackend" and not backends:
            raise InsecureTokenStoreError(f"the keyring chainer has no usable backend; {_REMEDY}")
        for item in backends or [backend]:
            module = type(item).__module__
            if why := next((why for prefix, why in _BAD_BACKENDS.items() if module.startswith(prefix)), None):
                raise InsecureTokenStoreError(f"{why} ({module}.{type(item).__name__}); {_REMEDY}")

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - KeyringError, and backends raise anything
            raise TokenStoreError(f"keyring operation failed ({type(exc).__name__}); {_REMEDY}") from None

    def load(self, key: str) -> dict[str, Any] | None:
        kr = self._keyring()
        if (header := self._call(kr.get_password, self.service, key)) is None:
            return None
        damaged = f"is damaged; run logout to reset it (service {self.service!r})"
        try:
            version, gen, count, digest = header.split(":")
            assert version == "v1"
            parts = [self._call(kr.get_password, self.service, f"{key}#{gen}#{i}") for i in range(int(count))]
            blob = "".join(p for p in parts if p is not None)
            if hashlib.sha256(blob.encode("ascii")).hexdigest()[:16] != digest:
                raise ValueError("digest")
            raw = zlib.decompress(base64.b64decode(blob))
        except (ValueError, AssertionError, zlib.error, TypeError):
            raise TokenStoreError(f"the keyring entry for this server {damaged}") from None
        return _json_object(raw, "the keyring entry for this server", damaged)

    def save(self, key: str, record: dict[str, Any]) -> None:
        kr = self._keyring()
        text = base64.b64encode(zlib.compress(json.dumps(record, separators=(",", ":")).encode("utf-8"), 9)).decode()
        chunks = [text[i : i + _CHUNK] for i in range(0, len(text), _CHUNK)] or [""]
        old = self._call(kr.get_password, self.service, key)
        gen = os.urandom(4).hex()
        # New chunks first, then the header that points at them: a reader sees
        # the old record or the new one, never a mix.
        for i, chunk in enumerate(chunks):
            self._call(kr.set_password, self.service, f"{key}#{gen}#{i}", chunk)
        digest = hashlib.sha256(text.encode("ascii")).hexdigest()[:16]
        self._call(kr.set_password, self.service, key, f"v1:{gen}:{len(chunks)}:{digest}")
        self._drop(kr, key, old)

    def _drop(self, kr: Any, key: str, header: str | None, *, with_header: bool = False) -> None:
        """Delete the entries *header* names (and the header), best effort: leftovers are harmless."""
        parts = (header or "").split(":")
        count = int(parts[2]) if len(parts) == 4 and parts[2].isdigit() else 0
        for name in ([key] if with_header else []) + [f"{key}#{parts[1]}#{i}" for i in range(count)]:
            with contextlib.suppress(Exception):
                kr.delete_password(self.service, name)

    def delete(self, key: str) -> None:
        kr = self._keyring()
        self._drop(kr, key, self._call(kr.get_password, self.service, key), with_header=True)

    def _lock_file(self, key: str) -> Path:
        self._lock_dir = self._lock_dir or _keyring_lock_dir()
        return self._lock_dir / (_key_name(f"{self.service}\0{key}") + ".lock")


def _keyring_lock_dir() -> Path:
    """Where :class:`KeyringTokenStore` keeps its lock files (the keyring has no locks).

    ``$XDG_RUNTIME_DIR`` is private to the user by construction; the fallback in
    the shared temporary directory is checked like a token directory, so a
    directory another user planted there is refused rather than used.
    """
    if runtime := os.environ.get("XDG_RUNTIME_DIR"):
        directory = Path(runtime) / "mcpsync-locks"
    else:
        user = os.geteuid() if hasattr(os, "geteuid") else "user"
        directory = Path(tempfile.gettempdir()) / f"mcpsync-{user}-locks"
    _private_dir(directory, "keyring lock directory")
    return directory
