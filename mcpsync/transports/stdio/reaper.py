"""No server outlives its host: one small guardian process per host process.

``close()`` and the at-exit hook stop every server, but a host that is
SIGKILLed (a gunicorn worker past its timeout, the OOM killer) runs neither,
and a server that ignores stdin EOF and SIGTERM would then run forever.  So the
first stdio connection of a process starts a *reaper*: a ``/bin/sh`` loop, about
1 MB, in a session of its own (a Ctrl-C in the terminal does not reach it), not
our child (it is started through a shell that exits at once, so nothing waits
on it or counts it as a leak).  Its stdin is one end of a socket pair; we keep
the other and write ``+ PGID`` when a server starts and ``- PGID`` once its
process group is gone.  When our end closes, which the kernel does however the
host dies, the reaper's ``read`` sees EOF: it sends SIGTERM to every group still
registered, then SIGKILL a second later, and exits.

* No thread, no polling: one short write per server start and stop.
* ``PR_SET_PDEATHSIG`` is not used: it fires when the *thread* that spawned the
  server exits, and lazy connects run on request threads.
* Fork (:mod:`mcpsync._fork`): a child closes its copy of our end at once, so a
  child that exits kills nothing of its parent's, and the parent's death is
  still seen while the child lives; the child's own first server starts the
  child's own reaper.  The socket is close-on-exec, so programs we run never hold it.
* The socket is written with ``MSG_NOSIGNAL`` where there is one: a dead reaper
  must not SIGPIPE a host that restored the default handler.  A reaper found dead
  is replaced, with every group still registered.
* Windows, or no ``/bin/sh``: no reaper (``close()`` and the at-exit hook still
  stop the servers); see docs/deployment.rst.
"""

from __future__ import annotations

import logging
import os
# _socket, not socket: socket.py builds enum classes of every constant at import, which
# would cost a stdio-only process ~0.35 MB of RSS (bench/RESULTS.md's RSS row) for one pair.
import _socket
import subprocess
import sys
import threading

from mcpsync import _fork

__all__ = ["unwatch", "watch"]

_log = logging.getLogger(__name__)

# The background list's stdin is redirected explicitly: without that, a non-interactive
# shell gives it /dev/null.  Lines are "+ PGID" or "- PGID" (ours: digits only).  At EOF:
# SIGTERM to every group left, SIGKILL a second later.
_SCRIPT = r"""exec 3<&0; ( trap '' HUP INT TERM; gs=
while read -r op pg; do if [ "$op" = + ]; then gs="$gs $pg"; else
  k=; for g in $gs; do [ "$g" = "$pg" ] || k="$k $g"; done; gs=$k; fi; done
[ -n "$gs" ] || exit 0; for g in $gs; do kill -s TERM -- "-$g"; done; sleep 1
for g in $gs; do kill -s KILL -- "-$g"; done ) <&3 >/dev/null 2>&1 &"""
_FLAGS = getattr(_socket, "MSG_NOSIGNAL", 0)

_lock = threading.Lock()
_sock: _socket.socket | None = None
_groups: set[int] = set()
_unavailable = sys.platform == "win32"


def watch(pgid: int) -> None:
    """Have the reaper kill process group *pgid* if this process dies first."""
    if _unavailable:  # Windows, or no /bin/sh: nothing to tell
        return
    with _lock:
        _groups.add(pgid)
        _send(b"+ %d\n" % pgid)


def unwatch(pgid: int) -> None:
    """The group *pgid* is gone: forget it (its number may be reused)."""
    with _lock:
        if pgid in _groups:
            _groups.discard(pgid)
            _send(b"- %d\n" % pgid)


def _send(line: bytes) -> None:
    """Holding ``_lock``: tell the reaper, starting it first (again, if it died) when needed."""
    global _sock
    for _ in range(2):
        if _sock is None:
            _sock = _start()
            line = b"".join(b"+ %d\n" % group for group in _groups)  # all of them, to a new one
        if _sock is None:
            return
        try:
            _sock.sendall(line, _FLAGS)
            return
        except OSError:  # the reaper died (someone killed it): replace it
            _sock.close()
            _sock = None


def _start() -> _socket.socket | None:
    global _unavailable
    if _unavailable:
        return None
    ours, theirs = _socket.socketpair()
    try:
        # The reaper's `read` must block: on EAGAIN it would take the quiet for EOF and kill
        # every server at once.  The C-level pair is blocking, unlike a gevent- or
        # eventlet-patched socket; say so anyway, as the flag belongs to the shared file.
        os.set_blocking(theirs.fileno(), True)
        try:
            starter = subprocess.Popen(["/bin/sh", "-c", _SCRIPT], stdin=theirs.fileno(), stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)
        finally:
            theirs.close()
        starter.wait(5.0)  # the shell exits once the loop runs in the background
        return ours
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:  # no /bin/sh, or exiting
        ours.close()
        _unavailable = True
        _log.warning("cannot start the stdio server reaper (%s); a server may outlive this"
                     " process if it is killed", exc)
        return None


def _after_fork_in_child() -> None:
    # The parent's servers are not ours to kill, and our copy of its socket would hide
    # the parent's death from its reaper: let go of it (close() never shuts a socket down).
    global _lock, _sock
    if _sock is not None:
        _sock.close()
    _lock, _sock = threading.Lock(), None
    _groups.clear()


_fork.on_fork(_after_fork_in_child)
