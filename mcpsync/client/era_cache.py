"""The ``mcpsync`` command's era cache: skip the era probe for servers it has met before.

One small JSON file per server, in ``$XDG_CACHE_HOME/mcpsync/era`` (default
``~/.cache/mcpsync/era``, or ``$MCPSYNC_ERA_CACHE``; the directories 0700, the
files 0600), named by a hash
of the server's configuration: the transport, the command, its arguments and
working directory, the URL, and the *names* (not the values) of the
environment variables and headers, so no secret goes into the hash.  It holds
the ``server/discover`` result of a 2026-07-28 server, or the fact that the
server took the ``initialize`` handshake.

The next run passes that to the client (``prior_discover=``, or a handshake
first), so it skips the probe.  A server that rejects the remembered era is
probed again (:meth:`mcpsync.client.connection.Connection.stale_prior`), and what the new probe or
handshake finds is written back: an interceptor records every successful
``server/discover`` and ``initialize``.  A cache that cannot be read or
written is ignored; it never fails a command.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpsync.exceptions import ProtocolError

if TYPE_CHECKING:
    from mcpsync.client.interceptors import CallNext, OutgoingRequest
    from mcpsync.config import ServerConfig

__all__ = ["cache_dir", "cache_key", "era_options", "EraRecorder"]

log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """Where the entries live (not created here); ``MCPSYNC_ERA_CACHE`` overrides it."""
    if os.environ.get("MCPSYNC_ERA_CACHE"):
        return Path(os.environ["MCPSYNC_ERA_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcpsync" / "era"


def cache_key(entry: ServerConfig) -> str:
    """A stable hash of what identifies *entry*'s server (no secret values in it)."""
    identity = {"transport": entry.transport, "command": entry.command, "args": list(entry.args), "cwd": entry.cwd,
                "url": entry.url, "env": sorted(entry.env or {}),
                "headers": sorted(k.lower() for k in entry.headers or {})}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]


def era_options(entry: ServerConfig) -> dict[str, Any]:
    """Client options that reuse (and keep up to date) the remembered era of *entry*."""
    path = cache_dir() / f"{cache_key(entry)}.json"
    options: dict[str, Any] = {"interceptors": [EraRecorder(path)]}
    saved = _read(path)
    if saved is not None and saved.get("era") == "modern" and isinstance(saved.get("discover"), dict):
        from mcpsync import types

        try:
            options["prior_discover"] = types.from_wire(types.DiscoverResult, saved["discover"])
        except ProtocolError:
            log.debug("ignoring a malformed era cache entry %s", path.name)
    elif saved is not None and saved.get("era") == "legacy":
        options["_prior_era"] = "legacy"
    return options


class EraRecorder:
    """An interceptor writing what each probe or handshake found to the cache entry."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, request: OutgoingRequest, call_next: CallNext) -> dict[str, Any] | None:
        result = call_next(request)
        if isinstance(result, dict):
            if request.method == "server/discover":
                _write(self.path, {"era": "modern", "discover": result})
            elif request.method == "initialize":
                _write(self.path, {"era": "legacy", "protocolVersion": result.get("protocolVersion")})
        return result


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.debug("ignoring unreadable era cache entry %s: %s", path.name, type(exc).__name__)
        return None
    return data if isinstance(data, dict) else None


def _write(path: Path, entry: dict[str, Any]) -> None:
    if _read(path) == entry:
        return
    try:
        for directory in (path.parent.parent, path.parent):  # .../mcpsync and .../mcpsync/era
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".era-", suffix=".tmp")  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(entry, out)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        log.debug("could not write era cache entry %s: %s", path.name, type(exc).__name__)
