"""What the framework token stores share: one user's records, sealed for their rows, and the waits
for their locks.

A store object is bound to one user (``store.load(key)`` reads that user's record only),
which is what each framework hands to that user's :class:`~mcpsync.auth.OAuth`.  Every
wait for a lock (another thread's, another process's) ends by the deadline of the call
that needs the token (:class:`~mcpsync.RequestTimeout`), and never lasts longer than
:data:`LOCK_TTL` (:class:`~mcpsync.auth.TokenStoreError`).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from .. import _fork
from ..auth import TokenStore, TokenStoreError, _deadline
from ._cipher import RecordCipher, row_name

#: Seconds a lock waits for another holder (and a cache lock lives if its holder dies).
LOCK_TTL = 60.0

# Weak values: a lock lives while a request holds it, so the map does not grow with every
# user and key a long-lived worker ever saw.
_thread_locks: weakref.WeakValueDictionary[tuple[str, str, str], threading.RLock] = weakref.WeakValueDictionary()
_guard = threading.Lock()


def _after_fork() -> None:
    # A parent thread may have held the guard or a record's lock at fork(): the child's are fresh.
    global _guard
    _guard = threading.Lock()
    _thread_locks.clear()


_fork.on_fork(_after_fork)


class UserRecords(TokenStore):
    """One user's token records, each sealed (:class:`~._cipher.RecordCipher`) for its row.

    :param user_key: the user (any string: a primary key, ``"user:42"``...).
    :param cipher: encrypts the records (from ``MCP_TOKEN_KEY``).
    """

    def __init__(self, user_key: str, cipher: RecordCipher) -> None:
        super().__init__()
        self.user_key, self._cipher = str(user_key), cipher

    def seal(self, key: str, record: dict[str, Any]) -> str:
        return self._cipher.encrypt(record, row_name(self.user_key, key))

    def unseal(self, key: str, sealed: Any) -> dict[str, Any] | None:
        """The record of a row (``None``/``""``: none yet), if it was sealed for that row."""
        return self._cipher.decrypt(str(sealed), row_name(self.user_key, key)) if sealed else None

    def thread_lock(self, where: str, key: str) -> threading.RLock:
        # A store object is made per request, so its own locks would never meet another
        # request's: the threads of a process share one lock per place, user and key.
        with _guard:
            return _thread_locks.setdefault((where, self.user_key, key), threading.RLock())


def gave_up(what: str) -> Exception:
    """The call's deadline passed (RequestTimeout), or the lock's own time to live did."""
    return _deadline.expired(what) if _deadline.passed() else TokenStoreError(f"timed out {what}")


def poll(attempt: Callable[[], bool], what: str) -> None:
    """Try *attempt* until it succeeds, within :data:`LOCK_TTL` and the call's deadline.

    For locks no backend can wait on (a cache's ``add``, SQLite's write lock): it polls.
    """
    deadline = time.monotonic() + _deadline.capped(LOCK_TTL)
    while not attempt():
        left = deadline - time.monotonic()
        if left <= 0:
            raise gave_up(what)
        time.sleep(min(0.05, left))
