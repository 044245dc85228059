"""Token stores for Django: one on the database, one on the cache; both per user, both encrypted.

Each store object is bound to one user (``store.load(key)`` reads that
user's record only), which is what :func:`mcpsync.contrib.django.oauth_for_user`
passes to :class:`~mcpsync.auth.OAuth`.  Records are encrypted with
``MCP_TOKEN_KEY`` before they leave the process.

Locks (held while a refresh token is spent): both stores lock between the
threads of a process.  Across processes the database store locks the user's
row with ``SELECT ... FOR UPDATE`` where the database has it (PostgreSQL,
MySQL, Oracle; SQLite serialises writers anyway) and the cache store uses
``cache.add`` as a lock with an expiry (shared caches: Redis, Memcached).
Every wait for a lock ends by the deadline of the call that needs the token
(:class:`~mcpsync.RequestTimeout`), and never lasts longer than
:data:`~mcpsync.contrib._records.LOCK_TTL`.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from typing import Any

from django.db import IntegrityError, OperationalError, connections, router, transaction

from ...auth import TokenStoreError, _deadline
from ...auth._stores import _held
from .._cipher import RecordCipher, digest
from .._records import LOCK_TTL, UserRecords, gave_up, poll

__all__ = ["LOCK_TTL", "CacheTokenStore", "DatabaseTokenStore"]


class DatabaseTokenStore(UserRecords):
    """One user's records in the ``mcpsync_token`` table.

    :param user_key: the user's primary key (any string).
    :param cipher: encrypts the records (from ``MCP_TOKEN_KEY``).
    """

    def _rows(self, key: str) -> Any:
        from .models import McpToken

        return McpToken.objects.filter(user_key=self.user_key, key_hash=digest(key))

    def load(self, key: str) -> dict[str, Any] | None:
        # "": the empty row lock() made to have something to lock; no record yet.
        return self.unseal(key, self._rows(key).values_list("sealed", flat=True).first())

    def save(self, key: str, record: dict[str, Any]) -> None:
        from .models import McpToken

        sealed = self.seal(key, record)
        for _ in range(2):  # a concurrent first save from another process wins once
            if self._rows(key).update(sealed=sealed):
                return
            try:
                with transaction.atomic(using=router.db_for_write(McpToken)):
                    McpToken.objects.create(user_key=self.user_key, key_hash=digest(key), sealed=sealed)
                return
            except IntegrityError:
                continue
        raise TokenStoreError("cannot save a token record (the database refused it twice)")

    def delete(self, key: str) -> None:
        self._rows(key).delete()

    @classmethod
    def forget_user(cls, user_key: str) -> int:
        """Delete every record of a user (e.g. when the account is deleted); how many rows."""
        from .models import McpToken

        deleted, _ = McpToken.objects.filter(user_key=str(user_key)).delete()
        return int(deleted)

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        from .models import McpToken

        alias = router.db_for_write(McpToken)
        with _held(self.thread_lock("database", key)):
            if not connections[alias].features.has_select_for_update:
                yield
                return
            with transaction.atomic(using=alias):
                self._lock_row(key, alias)
                yield

    def _lock_row(self, key: str, alias: str) -> None:
        """``SELECT ... FOR UPDATE`` the user's row, made first (empty) if there is none.

        Locking no row locks nothing: two processes would both go on.  The empty row is
        inserted in a savepoint, so a concurrent insert's conflict leaves this transaction
        usable; the losing process then waits on the row the other one locked.
        """
        from .models import McpToken

        if connections[alias].vendor == "postgresql":
            # Another process's refresh is waited for within the call's deadline (and never
            # longer than LOCK_TTL); 0 would mean no limit at all.
            wait_ms = max(1, int(_deadline.capped(LOCK_TTL) * 1000))
            with connections[alias].cursor() as cursor:
                cursor.execute(f"SET LOCAL lock_timeout = '{wait_ms}ms'")
        for _ in range(3):
            try:
                if list(self._rows(key).select_for_update().values_list("pk", flat=True)):
                    return
            except OperationalError:
                raise gave_up("waiting for another process's token refresh") from None
            with contextlib.suppress(IntegrityError), transaction.atomic(using=alias):
                McpToken.objects.using(alias).create(user_key=self.user_key, key_hash=digest(key), sealed="")
        raise TokenStoreError("cannot lock the token record (it was deleted while locking, 3 times)")

    def __repr__(self) -> str:
        return "<DatabaseTokenStore>"


class CacheTokenStore(UserRecords):
    """One user's records in a Django cache (``MCP_TOKEN_CACHE``, default ``"default"``).

    A cache may evict: a record lost that way means the user connects the server again.

    :param user_key: the user's primary key (any string).
    :param cipher: encrypts the records (from ``MCP_TOKEN_KEY``).
    :param alias: the cache alias.
    """

    def __init__(self, user_key: str, cipher: RecordCipher, alias: str = "default") -> None:
        super().__init__(user_key, cipher)
        self.alias = alias

    @property
    def _cache(self) -> Any:
        from django.core.cache import caches

        return caches[self.alias]

    def _key(self, key: str, kind: str = "token") -> str:
        return f"mcpsync:{kind}:{digest(self.user_key)[:32]}:{digest(key)[:40]}"

    def load(self, key: str) -> dict[str, Any] | None:
        return self.unseal(key, self._cache.get(self._key(key)))

    def save(self, key: str, record: dict[str, Any]) -> None:
        self._cache.set(self._key(key), self.seal(key, record), timeout=None)

    def delete(self, key: str) -> None:
        self._cache.delete(self._key(key))

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        name, token = self._key(key, "lock"), secrets.token_hex(8)
        with _held(self.thread_lock(f"cache:{self.alias}", key)):
            # No cache offers a wait-for-release event: this polls.
            poll(lambda: bool(self._cache.add(name, token, timeout=LOCK_TTL)), "waiting for the token lock in the cache")
            try:
                yield
            finally:
                if self._cache.get(name) == token:
                    self._cache.delete(name)

    def __repr__(self) -> str:
        return f"<CacheTokenStore alias={self.alias!r}>"
