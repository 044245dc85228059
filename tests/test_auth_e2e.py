# ruff: noqa: F811  (fixtures imported from tests/auth_server/conftest_auth.py)
"""End to end against two real authorization servers, each with a protected MCP server.

* ``oidc-provider`` (OpenID Certified; JWT access tokens) with the official
  Python SDK behind a JWKS token check (``tests/auth_server/server.mjs`` and
  ``resource_server.py``);
* the TypeScript SDK's own ``mcpAuthRouter`` with an in-memory provider (opaque
  tokens, strict rotation, family revocation) and an SDK MCP server behind its
  ``requireBearerAuth`` (``tests/auth_server/ts_server.mjs``).

Every test runs against both.  The whole flow runs for real: 401 -> RFC 9728
discovery -> authorization server metadata -> dynamic registration -> PKCE
login through the server's pages (driven headlessly) -> token -> retry; then
refresh with rotation, step-up on 403, a restart with a persisted store
(including a refresh with the persisted refresh token), and the web-app flow.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

import mcpsync
from mcpsync.auth import (
    AuthorizationRequired,
    FileTokenStore,
    LoopbackLogin,
    MemoryTokenStore,
    OAuth,
    StateMismatchError,
)
from tests.auth_server.conftest_auth import (  # noqa: F401
    auth_server,
    browse,
    follow_to_callback,
    protected_server,
    resource_server,
    ts_sdk_server,
)

pytestmark = pytest.mark.timeout(90)


def _client(url: str, auth: OAuth) -> mcpsync.Client:
    return mcpsync.Client.http(url, auth=auth, transport="streamable-http", timeout=20)


def _stats(url: str) -> dict[str, int]:
    return dict(requests.get(url, timeout=5).json())


def _refreshes_and_rotates(client: mcpsync.Client, store: Any, key: str, auth: OAuth) -> None:
    """Expire the stored access token; the next call must refresh, and both tokens rotate."""
    record = store.load(key)
    assert record is not None
    first = dict(record["tokens"])
    record["tokens"]["expires_at"] = 0
    store.save(key, record)
    for binding in auth._bindings.values():  # as a fresh process would: read the store
        binding.tokens = None
    assert client.call_tool("whoami").text == "alice"
    second = store.load(key)["tokens"]
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]


@pytest.fixture(params=["oidc-provider", "ts-sdk"])
def peer(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(MCP endpoint URL, stats URL with the authorization server's ``refresh`` counter)."""
    if request.param == "oidc-provider":
        mcp = request.getfixturevalue("resource_server")
        return mcp, request.getfixturevalue("auth_server") + "/test/stats"
    mcp = request.getfixturevalue("ts_sdk_server")
    return mcp, mcp.rsplit("/", 1)[0] + "/test/stats"


def test_full_flow_then_refresh_with_rotation_then_step_up(
    peer: tuple[str, str], tmp_path: Path
) -> None:
    resource_server, stats_url = peer
    store = FileTokenStore(tmp_path / "tokens")
    opened: list[str] = []

    def open_browser(url: str) -> bool:
        opened.append(url)
        return browse(url)

    auth = OAuth(
        store=store,
        login=LoopbackLogin(open_browser=open_browser, timeout=30),
        client_name="e2e",
    )
    with _client(resource_server, auth) as client:
        assert client.call_tool("whoami").text == "alice"
        assert len(opened) == 1
        query = parse_qs(urlsplit(opened[0]).query)
        assert query["code_challenge_method"] == ["S256"] and query["resource"] == [
            resource_server
        ]
        key = resource_server
        record = store.load(key)
        assert record is not None
        first = record["tokens"]
        assert (
            first["refresh_token"]
            and first["expires_at"] > 0
            and "mcp:read" in first["scope"]
        )

        # Force expiry: the next call refreshes; the rotated refresh token is stored.
        _refreshes_and_rotates(client, store, key, auth)
        assert _stats(stats_url)["refresh"] == 1

        # Step-up: "write" needs mcp:write -> 403 insufficient_scope -> new login with the union.
        assert client.call_tool("write", {"text": "x"}).text == "wrote x"
        assert len(opened) == 2
        scopes = set(parse_qs(urlsplit(opened[1]).query)["scope"][0].split())
        assert {"mcp:read", "mcp:write"} <= scopes
    assert len(list((tmp_path / "tokens").glob("*.json"))) == 1

    # A restart: a new OAuth on the same store needs no login.
    def no_browser(url: str) -> bool:
        raise AssertionError("no login expected after a restart")

    again = OAuth(
        store=FileTokenStore(tmp_path / "tokens"),
        login=LoopbackLogin(open_browser=no_browser),
    )
    with _client(resource_server, again) as client:
        assert client.call_tool("write", {"text": "y"}).text == "wrote y"

    # A restart after the access token expired: the persisted (rotated) refresh token works.
    record = store.load(resource_server)
    assert record is not None
    record["tokens"]["expires_at"] = 0
    store.save(resource_server, record)
    again = OAuth(
        store=FileTokenStore(tmp_path / "tokens"),
        login=LoopbackLogin(open_browser=no_browser),
    )
    with _client(resource_server, again) as client:
        assert client.call_tool("write", {"text": "z"}).text == "wrote z"
    assert _stats(stats_url)["refresh"] == 2


def test_refresh_is_single_flight_across_threads(peer: tuple[str, str]) -> None:
    resource_server, stats_url = peer
    store = MemoryTokenStore()
    auth = OAuth(store=store, login=LoopbackLogin(open_browser=browse, timeout=30))
    with _client(resource_server, auth) as client:
        client.call_tool("whoami")
        record = store.load(resource_server)
        assert record is not None
        record["tokens"]["expires_at"] = 0
        store.save(resource_server, record)
        for binding in auth._bindings.values():  # as a fresh process would: read the store
            binding.tokens = None
        before = _stats(stats_url)["refresh"]
        start = threading.Barrier(8)
        errors: list[BaseException] = []

        def call() -> None:
            try:
                start.wait(10)
                assert client.call_tool("whoami").text == "alice"
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=call, name=f"caller-{i}") for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors
        after = _stats(stats_url)
        assert after["refresh"] - before == 1
        assert after.get("reuse", 0) == 0  # ts-sdk counts refresh-token replays


def test_web_app_flow(peer: tuple[str, str]) -> None:
    resource_server, _ = peer
    store = MemoryTokenStore()
    redirect = "http://127.0.0.1:9/oauth/callback"  # never contacted: the "browser" stops there

    def web_auth() -> (
        OAuth
    ):  # one per request, as a web app would build it; the store is shared
        return OAuth(
            store=store,
            redirect_uri=redirect,
            login=None,
            server_url=resource_server,
            client_name="web",
        )

    with pytest.raises(AuthorizationRequired) as info:  # noqa: SIM117
        with _client(resource_server, web_auth()) as client:
            client.list_tools()
    url = info.value.url
    assert url.startswith("http://127.0.0.1:")
    callback = follow_to_callback(url)
    assert callback.startswith(redirect)
    forged = callback.replace("state=", "state=x")
    with pytest.raises(StateMismatchError):
        web_auth().complete(forged)
    web_auth().complete(callback)
    with pytest.raises(StateMismatchError):
        web_auth().complete(callback)  # one-shot
    with _client(resource_server, web_auth()) as client:
        assert client.call_tool("whoami").text == "alice"
    assert json.dumps(store.load(resource_server))  # the record is plain JSON


@pytest.mark.parametrize("metadata", ["origin", "stream"])
def test_refresh_over_legacy_http_sse(auth_server: str, metadata: str) -> None:  # noqa: F811
    """The 2024-11-05 transport behind the same token check: login, then a refresh mid-session
    (the event stream stays open; the POSTs carry the new token).  The metadata names the
    origin, or only the stream's path: the message endpoint the server named gets the token
    either way."""
    options = ("--legacy",) if metadata == "origin" else ("--legacy", "--stream-metadata")
    with protected_server(auth_server, *options) as url:
        store = MemoryTokenStore()
        auth = OAuth(store=store, login=LoopbackLogin(open_browser=browse, timeout=30), client_name="e2e-legacy")
        stats_url = auth_server + "/test/stats"
        with mcpsync.Client.http(url, auth=auth, transport="sse", timeout=20) as client:
            assert client.call_tool("whoami").text == "alice"
            before = _stats(stats_url)["refresh"]
            _refreshes_and_rotates(client, store, url, auth)
            assert _stats(stats_url)["refresh"] - before == 1
            # Step-up works on this transport too: a 403 on the POST, a new login, the call again.
            assert client.call_tool("write", {"text": "x"}).text == "wrote x"
