"""Per-user token records in the app's SQL database (SQLAlchemy 2.x), encrypted at rest.

:class:`SQLAlchemyTokens` is the ``mcpsync_token`` table on one engine, shared
by every user and thread of a process; :meth:`SQLAlchemyTokens.for_user` gives
the :class:`~mcpsync.auth.TokenStore` that reads and writes one user's rows
only, which is what :class:`~mcpsync.contrib.flask.MCP` hands to each user's
:class:`~mcpsync.auth.OAuth`.  Records are encrypted with ``MCP_TOKEN_KEY``
before they reach the database.  The store uses connections of its own (from
the engine's pool): a token saved is committed at once, whatever the app does
with its ``db.session``.

Locks (held while a refresh token is spent) are exclusive between the threads
of a process and between processes:

- PostgreSQL, MySQL/MariaDB, Oracle: ``SELECT ... FOR UPDATE`` on the user's
  row, in a transaction held for as long as the lock (on PostgreSQL with a
  ``lock_timeout`` of :data:`~mcpsync.contrib._records.LOCK_TTL`, or what is left of
  the call's deadline when that is shorter, so a waiter never waits forever).
- SQLite, which has no row locks: ``BEGIN IMMEDIATE``, the database's write
  lock.  Other processes' readers go on, their writers (of any table) wait
  until the lock is released, within their busy timeout; this store retries
  its own writes and locks until ``LOCK_TTL`` (or the call's deadline).

Imports SQLAlchemy, which only the apps that use this module need.
"""

from __future__ import annotations

import contextlib
import datetime
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from ...auth import TokenStoreError, _deadline
from ...auth._stores import _held
from .._cipher import digest
from .._records import LOCK_TTL, UserRecords, gave_up, poll

if TYPE_CHECKING:
    from .._cipher import RecordCipher

__all__ = ["LOCK_TTL", "TABLE_NAME", "SQLAlchemyTokenStore", "SQLAlchemyTokens", "token_table"]

#: The table's name (the same as the Django integration's ``McpToken`` model's).
TABLE_NAME = "mcpsync_token"

T = TypeVar("T")


def token_table(metadata: sa.MetaData) -> sa.Table:
    """The ``mcpsync_token`` table on *metadata*, defined there once.

    Defined on the app's metadata (Flask-SQLAlchemy's ``db.metadata``), it is
    created by ``db.create_all()`` and seen by Alembic's autogenerate.
    """
    name = TABLE_NAME if metadata.schema is None else f"{metadata.schema}.{TABLE_NAME}"
    existing = metadata.tables.get(name)
    if existing is not None:
        return existing
    return sa.Table(
        TABLE_NAME,
        metadata,
        # Whose record: the user id the extension uses (e.g. "user:42").
        sa.Column("user_key", sa.String(255), primary_key=True),
        # SHA-256 of the store key (the MCP server's URL, or a login in progress).
        sa.Column("key_hash", sa.String(64), primary_key=True),
        # The record, Fernet-encrypted; "" for a row made only to be locked.
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _failed(exc: sa_exc.SQLAlchemyError) -> TokenStoreError:
    # Only the driver's own message: SQLAlchemy's text would add the statement's parameters.
    orig = getattr(exc, "orig", None)
    reason = str(orig).splitlines()[0] if orig is not None and str(orig) else type(exc).__name__
    return TokenStoreError(f"the token database failed: {reason}")


def _is_busy(exc: sa_exc.OperationalError) -> bool:
    """SQLite's "database is locked" (another connection holds the write lock)."""
    return "locked" in str(getattr(exc, "orig", exc)).lower()


class _Conflict(TokenStoreError):
    """A write broke a unique constraint (another process inserted the row first)."""


class _Held(threading.local):
    """The connection (and its engine) a thread's :meth:`SQLAlchemyTokenStore.lock` holds."""

    conn: sa.Connection | None = None
    engine: sa.Engine | None = None


class SQLAlchemyTokens:
    """Every user's token records in the ``mcpsync_token`` table (one object per app).

    :param engine: the engine, or a function that returns it (e.g.
        ``lambda: db.engine``, called in :meth:`for_user`, in a request).
    :param cipher: encrypts the records (from ``MCP_TOKEN_KEY``).
    :param metadata: where the table is defined (default: a metadata of its own);
        ignored when *table* is given.
    :param table: an existing table of the same columns.
    """

    def __init__(self, engine: sa.Engine | Callable[[], sa.Engine], cipher: RecordCipher, *,
                 metadata: sa.MetaData | None = None, table: sa.Table | None = None) -> None:
        self._engine = engine
        self.cipher = cipher
        self.table = table if table is not None else token_table(metadata or sa.MetaData())
        self._held = _Held()

    def engine(self) -> sa.Engine:
        """The engine (resolved now, if it was given as a function)."""
        return self._engine if isinstance(self._engine, sa.Engine) else self._engine()

    def for_user(self, user_key: str) -> SQLAlchemyTokenStore:
        """The store of one user's records."""
        return SQLAlchemyTokenStore(self, str(user_key), self.engine())

    def forget_user(self, user_key: str) -> int:
        """Delete every record of a user (e.g. when the account is deleted); how many rows."""
        statement = sa.delete(self.table).where(self.table.c.user_key == str(user_key))
        return int(self.run(self.engine(), lambda conn: conn.execute(statement).rowcount))

    def where(self, user_key: str, key: str) -> Any:
        """The condition selecting one user's row for *key*."""
        return sa.and_(self.table.c.user_key == user_key, self.table.c.key_hash == digest(key))

    def run(self, engine: sa.Engine, work: Callable[[sa.Connection], T]) -> T:
        """*work* in the transaction this thread's lock holds, else in a transaction of its own.

        On SQLite a write that finds the database locked by another process
        (past the driver's busy timeout) is tried again until ``LOCK_TTL``.
        """
        done: list[T] = []

        def attempt() -> bool:
            try:
                with engine.begin() as conn:
                    done.append(work(conn))
                return True
            except sa_exc.OperationalError as exc:
                if _is_busy(exc):
                    return False
                raise

        try:
            if self._held.conn is not None and self._held.engine is engine:
                return work(self._held.conn)
            poll(attempt, "waiting for the token database")
            return done[0]
        except sa_exc.IntegrityError as exc:
            raise _Conflict(str(_failed(exc))) from None
        except sa_exc.SQLAlchemyError as exc:
            raise _failed(exc) from None

    def _begin(self, engine: sa.Engine, user_key: str, key: str) -> sa.Connection:
        """A connection holding the cross-process lock (see the module's text)."""
        wait = _deadline.capped(LOCK_TTL)  # or less: what is left of the call's deadline
        got: list[sa.Connection] = []

        def attempt() -> bool:
            conn = engine.connect()
            try:
                if engine.dialect.name == "sqlite":
                    # The driver must not open transactions of its own: this one is ours.
                    conn.execution_options(isolation_level="AUTOCOMMIT")
                    conn.exec_driver_sql("BEGIN IMMEDIATE")
                else:
                    conn.begin()
                    if engine.dialect.name == "postgresql":
                        # At least 1 ms: 0 would mean no limit at all.
                        conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{max(1, int(wait * 1000))}ms'")
                    self._lock_row(conn, user_key, key)
            except BaseException as exc:
                conn.close()
                if isinstance(exc, sa_exc.OperationalError) and _is_busy(exc) and engine.dialect.name == "sqlite":
                    return False  # poll() tries again
                raise
            got.append(conn)
            return True

        try:
            poll(attempt, "waiting for the token lock in the database")
        except sa_exc.OperationalError as exc:
            if _is_busy(exc) or "timeout" in str(exc).lower() or _deadline.passed():
                raise gave_up("waiting for the token lock in the database") from None
            raise _failed(exc) from None
        except sa_exc.SQLAlchemyError as exc:
            raise _failed(exc) from None
        return got[0]

    def _lock_row(self, conn: sa.Connection, user_key: str, key: str) -> None:
        """``SELECT ... FOR UPDATE`` the row, made first (empty) if there is none."""
        if conn.dialect.name == "sqlite":
            return  # BEGIN IMMEDIATE locked the whole database already
        query = sa.select(self.table.c.key_hash).where(self.where(user_key, key)).with_for_update()
        for _ in range(3):
            if conn.execute(query).first() is not None:
                return
            # No row to lock yet: make one on another connection (so a concurrent
            # insert's conflict cannot spoil this transaction), then lock it.
            with contextlib.suppress(sa_exc.IntegrityError), conn.engine.begin() as other:
                other.execute(sa.insert(self.table).values(
                    user_key=user_key, key_hash=digest(key), sealed="", updated=_now()))
        raise TokenStoreError("cannot lock the token record (it was deleted while locking, 3 times)")

    @staticmethod
    def _end(conn: sa.Connection) -> None:
        """Commit the lock's transaction (also when its block raised: a refreshed token
        saved there must not be lost), and release the connection."""
        sqlite = conn.dialect.name == "sqlite"
        try:
            conn.exec_driver_sql("COMMIT") if sqlite else conn.commit()
        except sa_exc.SQLAlchemyError as exc:
            with contextlib.suppress(sa_exc.SQLAlchemyError):
                conn.exec_driver_sql("ROLLBACK") if sqlite else conn.rollback()
            raise _failed(exc) from None
        finally:
            conn.close()

    def __repr__(self) -> str:
        return f"<SQLAlchemyTokens table={self.table.name!r}>"


class SQLAlchemyTokenStore(UserRecords):
    """One user's records in the ``mcpsync_token`` table (from :meth:`SQLAlchemyTokens.for_user`)."""

    def __init__(self, tokens: SQLAlchemyTokens, user_key: str, engine: sa.Engine) -> None:
        super().__init__(user_key, tokens.cipher)
        self.tokens = tokens
        self._engine = engine

    def load(self, key: str) -> dict[str, Any] | None:
        query = sa.select(self.tokens.table.c.sealed).where(self.tokens.where(self.user_key, key))
        return self.unseal(key, self.tokens.run(self._engine, lambda conn: conn.execute(query).scalar_one_or_none()))

    def save(self, key: str, record: dict[str, Any]) -> None:
        table, sealed = self.tokens.table, self.seal(key, record)
        update = sa.update(table).where(self.tokens.where(self.user_key, key))
        insert = sa.insert(table).values(user_key=self.user_key, key_hash=digest(key))

        def write(conn: sa.Connection) -> None:
            now = _now()
            if conn.execute(update.values(sealed=sealed, updated=now)).rowcount == 0:
                conn.execute(insert.values(sealed=sealed, updated=now))

        for _ in range(2):
            try:
                return self.tokens.run(self._engine, write)
            except _Conflict:
                # Another process's first save of this key won between our update and
                # insert (outside a lock): replace its record on the second round.
                continue
        raise TokenStoreError("cannot save a token record (the database refused it twice)")

    def delete(self, key: str) -> None:
        statement = sa.delete(self.tokens.table).where(self.tokens.where(self.user_key, key))
        self.tokens.run(self._engine, lambda conn: conn.execute(statement))

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold this user's lock on *key* against other threads and processes.

        Reentrant in a thread; the store's reads and writes in the ``with``
        block go through the lock's transaction, committed when the block ends.
        """
        tokens, held = self.tokens, self.tokens._held
        with _held(self.thread_lock(f"sqlalchemy:{id(tokens)}", key)):
            if held.conn is not None and held.engine is self._engine:
                tokens._lock_row(held.conn, self.user_key, key)  # nested: the same transaction
                yield
                return
            conn = tokens._begin(self._engine, self.user_key, key)
            held.conn, held.engine = conn, self._engine
            try:
                yield
            finally:
                held.conn = held.engine = None
                tokens._end(conn)

    def __repr__(self) -> str:
        return "<SQLAlchemyTokenStore>"
