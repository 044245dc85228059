"""A contract test class for token stores (as ``keyring.testing.backend`` does for keyrings).

Subclass :class:`TokenStoreContract` in your tests and provide a fresh
``store`` fixture; pytest then runs every contract test against it::

    import pytest
    from mcpsync.testing.token_store import TokenStoreContract

    class TestMyStore(TokenStoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path)
"""

from __future__ import annotations

import threading
from typing import Any

from mcpsync.auth._stores import TokenStore

__all__ = ["TokenStoreContract"]

#: A record as big as a real one with a long JWT access token and metadata (~8 KB).
BIG_RECORD: dict[str, Any] = {
    "tokens": {"access_token": "eyJ" + "a" * 4000, "refresh_token": "r" * 1500, "expires_at": 1.5e9,
               "scope": "mcp:read mcp:write", "issuer": "https://as.example", "resource": "https://mcp.example/mcp"},
    "server_metadata": {"issuer": "https://as.example", "scopes_supported": [f"scope{i}" for i in range(200)]},
}


class TokenStoreContract:
    """Tests every :class:`~mcpsync.auth.TokenStore` must pass.  Needs a ``store`` fixture."""

    def test_missing_key_loads_none(self, store: TokenStore) -> None:
        assert store.load("https://nothing.example/mcp") is None

    def test_round_trip(self, store: TokenStore) -> None:
        record = {"tokens": {"access_token": "at", "expires_at": 12.5}, "clients": {"https://i": {"client_id": "c"}}}
        store.save("https://a.example/mcp", record)
        assert store.load("https://a.example/mcp") == record

    def test_keys_are_independent(self, store: TokenStore) -> None:
        store.save("https://a.example/mcp", {"n": 1})
        store.save("https://a.example/mcp2", {"n": 2})
        assert store.load("https://a.example/mcp") == {"n": 1}
        assert store.load("https://a.example/mcp2") == {"n": 2}

    def test_save_replaces(self, store: TokenStore) -> None:
        store.save("k", {"old": True})
        store.save("k", {"new": True})
        assert store.load("k") == {"new": True}

    def test_delete(self, store: TokenStore) -> None:
        store.save("k", {"a": 1})
        store.delete("k")
        assert store.load("k") is None
        store.delete("k")  # deleting again is not an error

    def test_loaded_record_is_a_copy(self, store: TokenStore) -> None:
        store.save("k", {"tokens": {"a": 1}})
        loaded = store.load("k")
        assert loaded is not None
        loaded["tokens"]["a"] = 2
        assert store.load("k") == {"tokens": {"a": 1}}

    def test_big_record(self, store: TokenStore) -> None:
        store.save("https://big.example/mcp", BIG_RECORD)
        assert store.load("https://big.example/mcp") == BIG_RECORD

    def test_unicode(self, store: TokenStore) -> None:
        store.save("https://ü.example/mcp", {"name": "Zoë ✓"})
        assert store.load("https://ü.example/mcp") == {"name": "Zoë ✓"}

    def test_lock_is_exclusive_between_threads(self, store: TokenStore) -> None:
        inside, release, second_in = threading.Event(), threading.Event(), threading.Event()

        def holder() -> None:
            with store.lock("k"):
                inside.set()
                release.wait(10)

        def contender() -> None:
            with store.lock("k"):
                second_in.set()

        t1 = threading.Thread(target=holder, name="store-lock-holder")
        t1.start()
        assert inside.wait(10)
        t2 = threading.Thread(target=contender, name="store-lock-contender")
        t2.start()
        assert not second_in.wait(0.3)  # blocked while the first holds it
        release.set()
        assert second_in.wait(10)
        t1.join(10)
        t2.join(10)

    def test_lock_is_reentrant_for_save(self, store: TokenStore) -> None:
        with store.lock("k"):
            store.save("k", {"a": 1})
            assert store.load("k") == {"a": 1}

    def test_repr_shows_no_secret(self, store: TokenStore) -> None:
        store.save("k", {"tokens": {"access_token": "canary-repr-secret"}})
        assert "canary-repr-secret" not in repr(store)
