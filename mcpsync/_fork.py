"""The one after-fork registry: what a forked child must reset, in one place.

A child of ``os.fork()`` (gunicorn and uWSGI workers, Celery prefork, a
``multiprocessing`` fork pool) has only the thread that forked, yet holds a
copy of every lock (perhaps held at the fork by a thread that does not exist
in the child) and every inherited pipe end (the write end of a server's stdin
keeps that server from seeing EOF while the child lives).  Every object with
locks, threads or inherited pipe ends joins here instead of checking
``os.getpid()`` on each use:

* :func:`join` an object whose ``after_fork_in_child()`` resets it; it is held
  weakly, so joining never keeps anything alive;
* :func:`on_fork` a module-level function (module state: a shared thread, a lock).

Both run in the child right after the fork, before ``os.fork()`` returns there:
functions first (module state the objects may use), then objects.  A hook must be
quick, start no thread or process, and never touch the parent's resources beyond
letting go of its own copies.  Nothing here starts a thread at import; the one
``os.register_at_fork`` call is made at import (it is only a registration).
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["join", "on_fork"]

_log = logging.getLogger(__name__)
_functions: list[Callable[[], object]] = []
_objects: weakref.WeakSet[Any] = weakref.WeakSet()


def join(obj: Any) -> None:
    """Call ``obj.after_fork_in_child()`` in every forked child while ``obj`` lives."""
    _objects.add(obj)


def on_fork(function: Callable[[], object]) -> None:
    """Call ``function()`` in every forked child (module-level state)."""
    _functions.append(function)


def _in_child() -> None:
    for hook in [*_functions, *(obj.after_fork_in_child for obj in list(_objects))]:
        try:
            hook()
        except Exception:  # noqa: BLE001 - the other hooks must still run
            _log.exception("an after-fork hook failed")


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_in_child)
