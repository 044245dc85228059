"""Process helpers for the stdio transport: safe environment, spawning, group kill.

Kept apart from :mod:`mcpsync.transports.stdio.transport` so that the transport module
holds only framing and lifecycle logic.  Nothing here starts a thread or a
process at import time.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from mcpsync.exceptions import ServerStartError
from mcpsync.transports.stdio import reaper

__all__ = ["build_environment", "close_at_exit", "default_environment", "spawn", "stop_process_tree", "wait_exit"]


_WINDOWS = sys.platform == "win32"
_SIGKILL = getattr(signal, "SIGKILL", signal.SIGTERM)  # Windows has none: terminate is all there is
_Waiter = Callable[[float], bool]  # seconds -> whether what was awaited is done

# Why an allow-list: a Django/Flask process holds SECRET_KEY, database URLs and
# cloud credentials in its environment, and a third-party MCP server has no
# business seeing them.  These names are what programs need to find their
# tools, home directory, locale and temporary files.
_POSIX_ENV = frozenset({"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "TMPDIR", "TZ"})
_WINDOWS_ENV = frozenset(
    {
        "APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
        "PROCESSOR_ARCHITECTURE", "PROGRAMDATA", "PROGRAMFILES", "SYSTEMDRIVE",
        "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR",
    }
)

# The network a server must use: behind a corporate proxy or a TLS-inspecting
# gateway, a server that fetches anything fails without these.  Both spellings
# of the proxy variables are in use (curl reads only lower-case http_proxy).
_PROXY_ENV = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"})
_NETWORK_ENV = frozenset(
    {
        *_PROXY_ENV, "NO_PROXY",
        *(name.lower() for name in (*_PROXY_ENV, "NO_PROXY")),
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
    }
)


def without_credentials(url: str) -> str:
    """A proxy URL with any ``user:password@`` removed.

    >>> without_credentials("http://alice:s3cret@proxy.corp:8080/")
    'http://proxy.corp:8080/'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, path = rest.partition("/")
    authority = authority.rpartition("@")[2]
    return (scheme + sep if sep else "") + authority + slash + path


def default_environment(source: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the allow-listed subset of ``source`` (default: ``os.environ``).

    Besides what programs need to run (``PATH``, ``HOME``, locale, ...), the
    proxy and CA-certificate variables pass, so servers work behind a proxy
    or a TLS-inspecting gateway; credentials in a proxy URL are removed (a
    server that needs them gets them through ``env=``).  Values starting with
    ``()`` are dropped: they are exported bash functions, a classic injection
    vector (Shellshock).
    """
    env = os.environ if source is None else source
    allowed = _WINDOWS_ENV if _WINDOWS else _POSIX_ENV
    result: dict[str, str] = {}
    for key, value in env.items():
        name = key.upper() if _WINDOWS else key
        network = name in _NETWORK_ENV
        wanted = name in allowed or network or (not _WINDOWS and key.startswith("LC_"))
        if not wanted or value.startswith("()"):
            continue
        result[key] = without_credentials(value) if name.upper() in _PROXY_ENV else value
    return result


def build_environment(overrides: Mapping[str, str] | None) -> dict[str, str]:
    """The child's environment: the safe default with ``overrides`` merged over it.

    :raises TypeError: if a key or value is not a ``str``.
    """
    env = default_environment()
    for key, value in (overrides or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("env keys and values must be str")
        env[key] = value
    return env


def spawn(argv: list[str], env: dict[str, str], cwd: Any) -> subprocess.Popen[bytes]:
    """Start ``argv`` with three pipes in a new session (process group) of its own.

    :raises ~mcpsync.exceptions.ServerStartError: if it cannot be started; the
        ``OSError`` is chained.  The message names the program, never the
        arguments (they may hold tokens).
    """
    try:
        # A group of its own (POSIX: a session; Windows: a process group): killpg reaches the whole tree.
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                cwd=cwd, bufsize=0, close_fds=True, start_new_session=not _WINDOWS,
                                creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0))
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        where = getattr(exc, "filename", None)
        detail = f" ({where})" if where and where != argv[0] else ""
        raise ServerStartError(f"cannot start MCP server {argv[0]!r}: {reason}{detail}") from exc
    reaper.watch(proc.pid)  # its group dies with this process, however this process dies
    return proc


_exit_owners: weakref.WeakSet[Any] = weakref.WeakSet()
_exit_hook = False


def close_at_exit(owner: Any) -> None:
    """Call ``owner.close_at_exit()`` at interpreter exit if ``owner`` still lives.

    Reader threads are daemons and simply vanish at exit, so a server that does
    not exit on stdin EOF would be orphaned.  Registered on first use, never at
    import; no lock (a forked child could inherit it held): two threads racing
    here register the hook twice, and the second run finds nothing left to close.
    """
    global _exit_hook
    _exit_owners.add(owner)
    if not _exit_hook:
        _exit_hook = True
        atexit.register(_close_all_at_exit)


def _close_all_at_exit() -> None:
    for owner in list(_exit_owners):
        try:
            owner.close_at_exit()
        except Exception:  # noqa: BLE001 - the others must still be stopped
            pass


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to process group ``pgid``; ``False`` if the group is gone."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether *proc* exited (and was reaped) within *timeout* seconds."""
    try:
        proc.wait(timeout=max(timeout, 0.0))
    except subprocess.TimeoutExpired:
        return False
    return True


def stop_process_tree(proc: subprocess.Popen[bytes], *, close_grace: float, terminate_grace: float,
                      on_signal: Callable[[str], None] | None = None) -> None:
    """Stop a server whose stdin was already closed, then its whole group.

    Waits ``close_grace`` for the server to exit by itself; then SIGTERM to the
    group, ``terminate_grace``, SIGKILL.  The leader is always reaped.  Group
    members still alive after the leader exited (grandchildren that inherited
    our pipes) get the same TERM-then-KILL treatment, so no signal reaches a
    server that exited on stdin EOF.  Only the server's own group is ever signalled.
    """
    pgid = proc.pid  # spawn() made the server the leader of a group of its own

    def group_gone(timeout: float) -> bool:
        # No event exists for "a process we are not the parent of has died", so
        # poll; the interval is short and the whole wait is bounded by timeout.
        end = time.monotonic() + timeout
        while signal_group(pgid, 0):  # any process, zombies included, still in the group
            if time.monotonic() >= end:
                return False
            time.sleep(0.02)
        return True

    def send(sig: int) -> bool:
        if not _WINDOWS:
            return signal_group(pgid, sig)
        try:  # Windows has no process groups to signal; the leader only.
            proc.send_signal(sig)
        except OSError:
            return False
        return True

    def escalate(gone: _Waiter, grace: float, last: float, tag: str) -> None:
        # Wait grace for gone; then SIGTERM, terminate_grace, SIGKILL, last.
        if gone(grace):
            return
        for sig, name, wait in ((signal.SIGTERM, "TERM", terminate_grace), (_SIGKILL, "KILL", last)):
            if send(sig) and on_signal is not None:
                on_signal(name + tag)
            if gone(wait):
                return

    escalate(lambda timeout: wait_exit(proc, timeout), close_grace, 5.0, "")
    if not _WINDOWS:  # what is left of the group: grandchildren that inherited our pipes
        escalate(group_gone, 0.0, 2.0, "-group")
        if group_gone(0.0):
            reaper.unwatch(pgid)
