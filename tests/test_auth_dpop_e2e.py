"""DPoP end to end: oidc-provider issuing DPoP-bound tokens, and an MCP server checking the proofs.

oidc-provider (``tests/auth_server/server.mjs``) binds a token to the key of
the proof sent with the token request (``cnf.jkt``); the protected MCP server
(``resource_server.py``) checks every proof itself with PyJWT (signature,
``htm``, ``htu``, ``iat``, unique ``jti``, ``ath``, thumbprint = ``cnf.jkt``) and
refuses a bound token sent as Bearer.  Nonces: ``--dpop-nonce`` on either
server makes it require its own nonce; ``--dpop-nonce-loop`` makes the MCP
server ask for a new one forever.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
import requests

import mcpsync
from mcpsync.auth import DPoPNonceError, FileTokenStore, LoopbackLogin, MemoryTokenStore, OAuth
from tests.auth_server.conftest_auth import browse, oidc_provider, protected_server, sdk_bearer_server

pytestmark = pytest.mark.timeout(90)


def _client(url: str, auth: OAuth) -> mcpsync.Client:
    return mcpsync.Client.http(url, auth=auth, transport="streamable-http", timeout=20)


def _stats(mcp_url: str) -> dict[str, int]:
    return dict(requests.get(mcp_url.rsplit("/", 1)[0] + "/test/stats", timeout=5).json())


def _as_stats(issuer: str) -> dict[str, int]:
    return dict(requests.get(issuer + "/test/stats", timeout=5).json())


def _no_browser(url: str) -> bool:
    raise AssertionError("no login expected")


def test_dpop_bound_tokens_with_a_persisted_key(tmp_path: Path) -> None:
    with oidc_provider() as issuer, protected_server(issuer) as mcp:
        directory = tmp_path / "tokens"
        auth = OAuth(
            store=FileTokenStore(directory),
            login=LoopbackLogin(open_browser=browse, timeout=30),
        )
        with _client(mcp, auth) as client:
            assert client.call_tool("whoami").text == "alice"
            assert client.call_tool("whoami").text == "alice"
        files = list(directory.glob("*.json"))
        assert len(files) == 1
        assert stat.S_IMODE(os.stat(files[0]).st_mode) == 0o600
        record = json.loads(files[0].read_text())
        assert record["tokens"]["token_type"] == "DPoP"
        key = record["dpop_key"]
        assert key["kty"] == "EC" and key["crv"] == "P-256" and key["d"]
        first_stats = _stats(mcp)
        assert first_stats["dpop"] >= 2 and first_stats["bad_proof"] == 0
        assert _as_stats(issuer)["dpop_token"] >= 1

        # Expire the token: the refresh token is DPoP-bound too, so the refresh needs a proof
        # with the same key; a new process (a new OAuth on the same directory) does it.
        store = FileTokenStore(directory)
        stored = store.load(mcp)
        assert stored is not None
        stored["tokens"]["expires_at"] = 0
        store.save(mcp, stored)
        again = OAuth(store=FileTokenStore(directory), login=LoopbackLogin(open_browser=_no_browser))
        with _client(mcp, again) as client:
            assert client.call_tool("whoami").text == "alice"
        after = store.load(mcp)
        assert after is not None
        assert after["dpop_key"] == key  # the same key: the tokens stay bound to it
        assert after["tokens"]["access_token"] != stored["tokens"]["access_token"]
        assert _as_stats(issuer)["refresh"] == 1
        assert _stats(mcp)["bad_proof"] == 0


def test_nonces_from_both_servers_are_used_with_one_retry_each() -> None:
    with oidc_provider("--dpop-nonce") as issuer, protected_server(issuer, "--dpop-nonce") as mcp:
        auth = OAuth(store=MemoryTokenStore(), login=LoopbackLogin(open_browser=browse, timeout=30))
        with _client(mcp, auth) as client:
            for _ in range(12):  # the MCP server changes its nonce every five requests
                assert client.call_tool("whoami").text == "alice"
        as_stats, rs_stats = _as_stats(issuer), _stats(mcp)
        assert as_stats["dpop_nonce"] == 1  # asked once; the retry carried the nonce
        assert rs_stats["nonce_challenges"] == 1  # later nonces came with the 200 answers
        assert rs_stats["bad_proof"] == 0 and rs_stats["ok"] >= 12


def test_a_nonce_loop_is_a_typed_error_not_a_hang() -> None:
    with oidc_provider() as issuer, protected_server(issuer, "--dpop-nonce-loop") as mcp:
        auth = OAuth(store=MemoryTokenStore(), login=LoopbackLogin(open_browser=browse, timeout=30))
        started = time.monotonic()
        with pytest.raises(DPoPNonceError, match="again"):  # noqa: SIM117
            with _client(mcp, auth) as client:
                client.list_tools()
        assert time.monotonic() - started < 30
        assert _stats(mcp)["nonce_challenges"] == 2  # the first answer and the one retry


def test_dpop_false_gets_bearer_tokens_from_the_same_server() -> None:
    with oidc_provider() as issuer, protected_server(issuer) as mcp:
        store = MemoryTokenStore()
        auth = OAuth(store=store, login=LoopbackLogin(open_browser=browse, timeout=30), dpop=False)
        with _client(mcp, auth) as client:
            assert client.call_tool("whoami").text == "alice"
        record = store.load(mcp)
        assert record is not None
        assert record["tokens"]["token_type"] == "Bearer" and "dpop_key" not in record
        assert _stats(mcp)["dpop"] == 0 and _as_stats(issuer)["dpop_token"] == 0


def test_bearer_only_server_behind_a_dpop_capable_server_gets_bearer_tokens(tmp_path: Path) -> None:
    """oidc-provider offers DPoP; the official SDK's server takes ``Bearer`` only: login, calls
    and a refresh all work with bearer tokens (no proof is ever sent)."""
    with oidc_provider() as issuer, sdk_bearer_server(issuer) as mcp:
        directory = tmp_path / "tokens"
        auth = OAuth(store=FileTokenStore(directory), login=LoopbackLogin(open_browser=browse, timeout=30))
        with _client(mcp, auth) as client:
            assert client.call_tool("whoami").text == "alice"
            assert client.call_tool("whoami").text == "alice"
        store = FileTokenStore(directory)
        record = store.load(mcp)
        assert record is not None
        assert record["tokens"]["token_type"] == "Bearer" and "dpop_key" not in record
        assert _as_stats(issuer)["dpop_token"] == 0
        seen = requests.get(mcp.rsplit("/", 1)[0] + "/test/seen", timeout=5).json()
        assert seen["authorization"] and all(h.startswith("Bearer ") for h in seen["authorization"])

        # A new process after the access token expired: the refresh gives a bearer token too.
        record["tokens"]["expires_at"] = 0
        store.save(mcp, record)
        again = OAuth(store=FileTokenStore(directory), login=LoopbackLogin(open_browser=_no_browser))
        with _client(mcp, again) as client:
            assert client.call_tool("whoami").text == "alice"
        after = store.load(mcp)
        assert after is not None and after["tokens"]["token_type"] == "Bearer"
        assert after["tokens"]["access_token"] != record["tokens"]["access_token"]
        assert _as_stats(issuer)["refresh"] == 1 and _as_stats(issuer)["dpop_token"] == 0
