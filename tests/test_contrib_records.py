"""The token stores' shared thread locks (mcpsync/contrib/_records.py)."""

from __future__ import annotations

import gc
import os
import signal

import pytest

from mcpsync.contrib import _records
from mcpsync.contrib._cipher import RecordCipher
from mcpsync.contrib import generate_key


class _Records(_records.UserRecords):
    """A store with no rows: only the locks are under test."""

    def load(self, key: str) -> None:
        return None

    def save(self, key: str, record: object) -> None:
        pass


def _records_of(user: str) -> _records.UserRecords:
    return _Records(user, RecordCipher(generate_key()))


def test_a_lock_lives_while_it_is_held_and_is_shared_meanwhile() -> None:
    lock = _records_of("alice").thread_lock("db", "k")
    assert _records_of("alice").thread_lock("db", "k") is lock  # another request, the same lock
    del lock
    gc.collect()
    assert ("db", "alice", "k") not in _records._thread_locks  # the map does not grow for ever


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
def test_a_forked_child_gets_fresh_locks_though_a_parent_thread_held_them() -> None:
    from test_fork import _in_child

    def child() -> bool:  # both must be free at once (SIGALRM ends the child if one is not)
        signal.alarm(5)
        return _records_of("bob").thread_lock("db", "k").acquire(timeout=2)

    held = _records_of("bob").thread_lock("db", "k")
    with held, _records._guard:  # as a parent thread might, at fork()
        outcome = _in_child(child)
    assert outcome == "True"
