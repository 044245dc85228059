"""The SQLAlchemy token store of the Flask integration, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from mcpsync.auth import TokenStore, TokenStoreError
from mcpsync.contrib._cipher import RecordCipher
from mcpsync.contrib.flask.stores import SQLAlchemyTokens, token_table
from mcpsync.testing.token_store import TokenStoreContract
from tests import helpers_postgres
from tests.contrib_support import TEST_KEY, LineWaiter, require

pytestmark = pytest.mark.timeout(120)
NO_POSTGRES = helpers_postgres.available()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database for the module's tests (module-scoped: one PostgreSQL server for all of them)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'app.db'}"
        return
    require(NO_POSTGRES)  # the machine image has PostgreSQL: CI must run these
    with helpers_postgres.postgres_server() as url:
        yield url


@pytest.fixture
def tokens(database_url: str) -> Iterator[SQLAlchemyTokens]:
    engine = sa.create_engine(database_url)
    tokens = SQLAlchemyTokens(engine, RecordCipher(TEST_KEY))
    tokens.table.metadata.create_all(engine)
    try:
        yield tokens
    finally:
        tokens.table.metadata.drop_all(engine)
        engine.dispose()


class TestSQLAlchemyTokenStore(TokenStoreContract):
    @pytest.fixture
    def store(self, tokens: SQLAlchemyTokens) -> TokenStore:
        return tokens.for_user("user:alice")


def _rows(tokens: SQLAlchemyTokens) -> list[Any]:
    with tokens.engine().connect() as conn:
        return list(conn.execute(sa.select(tokens.table)).all())


def test_users_are_apart_and_records_are_sealed(tokens: SQLAlchemyTokens) -> None:
    alice, bob = tokens.for_user("user:alice"), tokens.for_user("user:bob")
    alice.save("https://mcp.example/mcp", {"tokens": {"access_token": "canary-alice-token"}})
    assert bob.load("https://mcp.example/mcp") is None
    bob.save("https://mcp.example/mcp", {"tokens": {"access_token": "bob"}})
    assert alice.load("https://mcp.example/mcp") == {"tokens": {"access_token": "canary-alice-token"}}
    rows = _rows(tokens)
    assert sorted(r.user_key for r in rows) == ["user:alice", "user:bob"]
    assert all("canary" not in r.sealed and "access_token" not in r.sealed for r in rows)
    bob.delete("https://mcp.example/mcp")
    assert alice.load("https://mcp.example/mcp") is not None
    assert tokens.forget_user("user:alice") == 1
    assert _rows(tokens) == []


def test_lock_and_writes_share_one_transaction(tokens: SQLAlchemyTokens) -> None:
    alice = tokens.for_user("user:alice")
    with alice.lock("k"), alice.lock("other"), alice.lock("k"):  # nested and reentrant
        alice.save("k", {"n": 1})
        alice.delete("other")
    assert alice.load("k") == {"n": 1}
    assert alice.load("other") is None  # the empty row made to lock "other" reads as nothing


def test_a_record_saved_under_the_lock_survives_an_error(tokens: SQLAlchemyTokens) -> None:
    alice = tokens.for_user("user:alice")
    with pytest.raises(RuntimeError), alice.lock("k"):
        alice.save("k", {"refreshed": True})  # the old refresh token is spent: keep this
        raise RuntimeError("the caller failed after the refresh")
    assert alice.load("k") == {"refreshed": True}


def test_a_wrong_key_or_a_broken_database_is_a_token_store_error(tokens: SQLAlchemyTokens) -> None:
    tokens.for_user("u").save("k", {"tokens": {"access_token": "canary-secret"}})
    other = SQLAlchemyTokens(tokens.engine(), RecordCipher("QYb2a3BRyNzyGqCKk08tDpL4bSzN6pN3UdS5TsEXJmM="))
    with pytest.raises(TokenStoreError):
        other.for_user("u").load("k")
    # A table that was never created (as if db.create_all() had not been run).
    absent = tokens.table.to_metadata(sa.MetaData(), name="no_such_table")
    missing = SQLAlchemyTokens(tokens.engine(), RecordCipher(TEST_KEY), table=absent)
    with pytest.raises(TokenStoreError) as info:
        missing.for_user("u").save("k", {"tokens": {"access_token": "canary-secret"}})
    assert "canary" not in str(info.value) and "no_such_table" in str(info.value)


def _legacy_seal(record: dict[str, Any]) -> str:
    """A record sealed as versions before the row binding did: the bare record, encrypted."""
    import json

    from cryptography.fernet import Fernet

    return Fernet(TEST_KEY.encode()).encrypt(json.dumps(record).encode()).decode()


def test_a_sealed_value_copied_to_another_row_is_refused(tokens: SQLAlchemyTokens) -> None:
    """Write access to the table, no key: copying alice's sealed record into the attacker's row
    (or under another server's key) must not make her tokens the attacker's."""
    url, other_url = "https://mcp.example/mcp", "https://other.example/mcp"
    alice, mallory = tokens.for_user("user:alice"), tokens.for_user("user:mallory")
    alice.save(url, {"tokens": {"access_token": "canary-alice-token"}})
    mallory.save(url, {"tokens": {"access_token": "mallory"}})
    alice.save(other_url, {"tokens": {"access_token": "alice-other"}})
    table = tokens.table
    with tokens.engine().begin() as conn:
        stolen = conn.execute(sa.select(table.c.sealed).where(tokens.where("user:alice", url))).scalar_one()
        conn.execute(sa.update(table).where(tokens.where("user:mallory", url)).values(sealed=stolen))
        conn.execute(sa.update(table).where(tokens.where("user:alice", other_url)).values(sealed=stolen))
    for store, key in ((mallory, url), (alice, other_url)):
        with pytest.raises(TokenStoreError, match="sealed for another user or server") as info:
            store.load(key)
        assert "canary" not in str(info.value)
    assert alice.load(url) == {"tokens": {"access_token": "canary-alice-token"}}  # her own row still works


def test_records_sealed_before_the_row_binding_are_still_read_and_bound_when_saved(
    tokens: SQLAlchemyTokens,
) -> None:
    alice = tokens.for_user("user:alice")
    alice.save("k", {"n": 0})
    with tokens.engine().begin() as conn:
        conn.execute(sa.update(tokens.table).where(tokens.where("user:alice", "k")).values(
            sealed=_legacy_seal({"n": 1})))
    assert alice.load("k") == {"n": 1}
    alice.save("k", {"n": 2})  # a refresh or a login saves it: from now on it is bound
    bob = tokens.for_user("user:bob")
    bob.save("k", {"n": 3})
    with tokens.engine().begin() as conn:
        bound = conn.execute(sa.select(tokens.table.c.sealed).where(tokens.where("user:alice", "k"))).scalar_one()
        conn.execute(sa.update(tokens.table).where(tokens.where("user:bob", "k")).values(sealed=bound))
    with pytest.raises(TokenStoreError, match="sealed for another user"):
        bob.load("k")


def test_the_file_store_refuses_a_sealed_file_copied_to_another_user(tmp_path: Path) -> None:
    """The Flask integration's MCP_TOKEN_DIR store: a per-user, encrypted directory of files."""
    from mcpsync.auth import FileTokenStore
    from mcpsync.contrib._useroauth import EncryptedTokenStore, ScopedTokenStore

    inner = EncryptedTokenStore(FileTokenStore(tmp_path / "tokens"), RecordCipher(TEST_KEY))
    alice, mallory = ScopedTokenStore(inner, "user:alice"), ScopedTokenStore(inner, "user:mallory")
    alice.save("https://mcp.example/mcp", {"tokens": {"access_token": "canary-alice-token"}})
    mallory.save("https://mcp.example/mcp", {"tokens": {"access_token": "mallory"}})
    files = {path: path.read_bytes() for path in (tmp_path / "tokens").glob("*.json")}
    assert len(files) == 2
    # Swap the two files: mallory's name now holds alice's sealed record, and the other way round.
    (a, a_data), (b, b_data) = files.items()
    a.write_bytes(b_data)
    b.write_bytes(a_data)
    for store in (alice, mallory):
        with pytest.raises(TokenStoreError, match="sealed for another user or server"):
            store.load("https://mcp.example/mcp")


#: A second process that takes user u's lock on key k, says so, and keeps it until its stdin closes.
HOLDER = """
import sys, sqlalchemy as sa
from mcpsync.contrib._cipher import RecordCipher
from mcpsync.contrib.flask.stores import SQLAlchemyTokens
tokens = SQLAlchemyTokens(sa.create_engine(sys.argv[1]), RecordCipher(sys.argv[2]))
store = tokens.for_user("u")
with store.lock("k"):
    store.save("k", {"by": "holder"})
    print("locked", flush=True)
    sys.stdin.read()
print("released", flush=True)
"""


def test_the_lock_excludes_another_process(tokens: SQLAlchemyTokens) -> None:
    url = tokens.engine().url.render_as_string(hide_password=False)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, url, TEST_KEY], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parent.parent)
    try:
        LineWaiter(holder.stdout).wait("locked", timeout=60)
        entered = threading.Event()
        seen: list[Any] = []

        def contender() -> None:
            store = tokens.for_user("u")
            with store.lock("k"):
                entered.set()
                seen.append(store.load("k"))

        thread = threading.Thread(target=contender, name="pg-lock-contender")
        thread.start()
        assert not entered.wait(1.0)  # the other process holds it
        assert holder.stdin is not None
        holder.stdin.close()
        assert entered.wait(30)
        thread.join(30)
        assert seen == [{"by": "holder"}]  # and sees what the holder wrote under it
    finally:
        holder.kill()
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()


def test_token_table_is_defined_once_per_metadata() -> None:
    metadata = sa.MetaData()
    assert token_table(metadata) is token_table(metadata)
    assert [c.name for c in token_table(metadata).primary_key] == ["user_key", "key_hash"]
