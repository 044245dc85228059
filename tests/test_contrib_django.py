"""mcpsync.contrib.django with Django's test client, against the demo server and real OAuth servers.

Django is set up once per process with the example site (examples/django_app)
and a fresh SQLite file; each test changes ``MCP_SERVERS`` with
``override_settings``, which rebuilds the server set (and closes the old one).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.auth_server.conftest_auth import auth_server, follow_to_callback  # noqa: F401
from tests.contrib_support import DEMO, EXAMPLES, TEST_KEY, django_site, remote_entry, restartable

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module", autouse=True)
def site(tmp_path_factory: pytest.TempPathFactory) -> None:
    django_site(tmp_path_factory.mktemp("django") / "db.sqlite3")


@pytest.fixture(autouse=True)
def fresh_servers() -> Iterator[None]:
    from mcpsync.contrib.django import _state

    yield
    _state.reset()  # no server process outlives the test


def _browser(user: str) -> Any:
    from django.test import Client

    browser = Client(HTTP_HOST="localhost")
    assert browser.get(f"/login?user={user}").status_code == 200
    return browser


# -- shared clients ------------------------------------------------------------------------


def test_views_share_one_client_and_recover_from_a_killed_server() -> None:
    from django.test import Client

    from mcpsync.contrib.django import get_client, mcp

    browser = Client()
    assert browser.get("/tools").json() == ["echo", "add", "countdown", "weather"]
    with ThreadPoolExecutor(8) as pool:
        sums = list(pool.map(lambda i: browser.get(f"/add?a={i}&b=0.5").json()["sum"], range(40)))
    assert sums == [i + 0.5 for i in range(40)]
    shared = get_client("demo")
    assert shared is mcp["demo"] and shared.generation == 1
    assert mcp.call_tool("echo", {"text": "one server"}).text == "one server"  # the only server
    pid = shared.get()._conn.transport.pid  # type: ignore[attr-defined]
    os.kill(pid, signal.SIGKILL)
    failed = browser.get("/add?a=1&b=1")
    assert failed.status_code == 502 and failed.json()["error"] in ("ConnectionClosed", "ServerStartError")
    assert browser.get("/add?a=2&b=2").json()["sum"] == 4.0
    assert shared.generation == 2


def test_a_slow_call_is_bounded_by_its_timeout() -> None:
    from django.test import Client

    response = Client().get("/slow?n=50&timeout=0.5")
    assert response.status_code == 504 and response.json()["error"] == "RequestTimeout"


def test_override_settings_rebuilds_the_servers() -> None:
    from django.test import override_settings

    from mcpsync.config import ConfigError
    from mcpsync.contrib.django import mcp

    with override_settings(MCP_SERVERS={"other": DEMO}):
        assert list(mcp) == ["other"]
        with pytest.raises(ConfigError, match="no MCP server 'demo'"):
            mcp["demo"]
    assert list(mcp) == ["demo"]


# -- checks and commands --------------------------------------------------------------------


def test_system_check_reports_each_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.checks import Error, Warning
    from django.test import override_settings

    from mcpsync.contrib.django.checks import check_mcp_settings

    monkeypatch.delenv("H19_UNSET", raising=False)
    bad = {"typo": {**DEMO, "arsg": []}, "env": {"url": "${H19_UNSET}"}, "cmd": {"command": "no-such-h19"},
           "web": {"url": "http://127.0.0.1:1/mcp", "oauth": True}}
    with override_settings(MCP_SERVERS=bad, MCP_TOKEN_KEY=None):
        messages = check_mcp_settings()
    found = {(type(m), m.id) for m in messages}
    assert found == {(Warning, "mcpsync.W001"), (Error, "mcpsync.E002"), (Error, "mcpsync.E003"),
                     (Error, "mcpsync.E005")}
    assert any("did you mean 'args'" in (m.hint or "") for m in messages)


def _manage(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mcpsite.settings", **(env or {})}
    return subprocess.run([sys.executable, str(EXAMPLES / "django_app" / "manage.py"), *args],
                          capture_output=True, text=True, timeout=60, env=full_env)


def test_bad_settings_stop_the_app_at_startup(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {"x": {"command": "no-such-h19"}}}')
    done = _manage("check", env={"MCP_CONFIG": str(config)})
    assert done.returncode != 0
    assert "ImproperlyConfigured: MCP_SERVERS has 1 error(s)" in done.stderr
    assert "(mcpsync.E003) MCP_SERVERS['x']: command 'no-such-h19'" in done.stderr
    assert _manage("check").returncode == 0


def test_management_commands_reuse_the_cli() -> None:
    from django.core.management import CommandError, call_command

    out = io.StringIO()
    call_command("mcp", "call", "add", "a=2", "b=5", stdout=out)
    assert out.getvalue().strip() == "7"
    out = io.StringIO()
    call_command("mcp", "tools", stdout=out)
    assert "countdown(n?: integer, delay?: number)" in out.getvalue()
    out = io.StringIO()
    call_command("mcp", "servers", stdout=out)
    assert out.getvalue().splitlines()[1].split()[:2] == ["demo", "stdio"]
    with pytest.raises(CommandError, match="exit status 4"):
        call_command("mcp", "call", "nope", stdout=io.StringIO(), stderr=io.StringIO())


def test_management_command_without_servers_is_a_usage_error() -> None:
    from django.core.management import CommandError, call_command
    from django.test import override_settings

    with override_settings(MCP_SERVERS=None), pytest.raises(CommandError, match="MCP_SERVERS is not set") as info:
        call_command("mcp", "servers", stdout=io.StringIO(), stderr=io.StringIO())
    assert info.value.returncode == 2  # a usage error, as for flask mcp


# -- token stores ---------------------------------------------------------------------------

from mcpsync.testing.token_store import TokenStoreContract  # noqa: E402


class TestDatabaseTokenStore(TokenStoreContract):
    @pytest.fixture
    def store(self, request: pytest.FixtureRequest) -> Any:
        from mcpsync.contrib._cipher import RecordCipher
        from mcpsync.contrib.django.stores import DatabaseTokenStore

        DatabaseTokenStore.forget_user("contract")
        return DatabaseTokenStore("contract", RecordCipher(TEST_KEY))

    def test_rows_are_encrypted_and_per_user(self, store: Any) -> None:
        from mcpsync.contrib._cipher import RecordCipher
        from mcpsync.contrib.django.models import McpToken
        from mcpsync.contrib.django.stores import DatabaseTokenStore

        store.save("https://mcp.example/mcp", {"tokens": {"access_token": "canary-db"}})
        assert "canary-db" not in "".join(McpToken.objects.values_list("sealed", flat=True))
        other = DatabaseTokenStore("someone-else", RecordCipher(TEST_KEY))
        assert other.load("https://mcp.example/mcp") is None


@pytest.mark.parametrize("kind", ["database", "cache"])
def test_a_users_lock_holds_across_store_objects_and_ends_by_the_callers_deadline(kind: str) -> None:
    # token_store_for() makes a store object per request: two requests of one user must
    # still exclude each other, and a waiter gives up at its own deadline.
    import threading
    import time

    from mcpsync import RequestTimeout
    from mcpsync.auth import _deadline
    from mcpsync.rpc.deadline import Deadline
    from mcpsync.contrib._cipher import RecordCipher
    from mcpsync.contrib.django.stores import CacheTokenStore, DatabaseTokenStore

    def store() -> Any:
        cls = DatabaseTokenStore if kind == "database" else CacheTokenStore
        return cls("lock-user", RecordCipher(TEST_KEY))

    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with store().lock("k"):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=holder, name="store-lock-holder")
    thread.start()
    try:
        assert held.wait(30)
        started = time.monotonic()
        with pytest.raises(RequestTimeout), _deadline.within(Deadline(0.3)):
            with store().lock("k"):
                pass
        assert time.monotonic() - started < 2.0
    finally:
        release.set()
        thread.join(30)
    with store().lock("k"):  # free again once the holder let go
        pass


class TestCacheTokenStore(TokenStoreContract):
    @pytest.fixture
    def store(self) -> Any:
        from django.core.cache import cache

        from mcpsync.contrib._cipher import RecordCipher
        from mcpsync.contrib.django.stores import CacheTokenStore

        cache.clear()
        return CacheTokenStore("contract", RecordCipher(TEST_KEY))


@pytest.mark.parametrize("kind", ["database", "cache"])
def test_a_sealed_record_copied_to_another_users_row_is_refused(kind: str) -> None:
    """Write access to the database (or cache), no key: copying the victim's sealed record into
    the attacker's row, or under another server's key, does not make it usable there."""
    from django.core.cache import cache

    from mcpsync.auth import TokenStoreError
    from mcpsync.contrib._cipher import RecordCipher
    from mcpsync.contrib.django.models import McpToken
    from mcpsync.contrib._cipher import digest
    from mcpsync.contrib.django.stores import CacheTokenStore, DatabaseTokenStore

    cls = DatabaseTokenStore if kind == "database" else CacheTokenStore
    victim, attacker = cls("victim", RecordCipher(TEST_KEY)), cls("attacker", RecordCipher(TEST_KEY))
    url, other = "https://mcp.example/mcp", "https://other.example/mcp"
    victim.save(url, {"tokens": {"access_token": "canary-victim-token"}})
    attacker.save(url, {"tokens": {"access_token": "attacker"}})
    victim.save(other, {"tokens": {"access_token": "victim-other"}})
    if kind == "database":
        stolen = McpToken.objects.get(user_key="victim", key_hash=digest(url)).sealed
        McpToken.objects.filter(user_key="attacker", key_hash=digest(url)).update(sealed=stolen)
        McpToken.objects.filter(user_key="victim", key_hash=digest(other)).update(sealed=stolen)
    else:
        stolen = cache.get(victim._key(url))
        cache.set(attacker._key(url), stolen)
        cache.set(victim._key(other), stolen)
    for store, key in ((attacker, url), (victim, other)):
        with pytest.raises(TokenStoreError, match="sealed for another user or server") as info:
            store.load(key)
        assert "canary" not in str(info.value)
    assert victim.load(url) == {"tokens": {"access_token": "canary-victim-token"}}
    for name in ("victim", "attacker"):
        DatabaseTokenStore.forget_user(name)


# -- per-user OAuth against real authorization servers ---------------------------------------


@pytest.fixture
def protected(auth_server: str) -> Iterator[Any]:  # noqa: F811
    yield from restartable(auth_server)


def _to_authorization_server(browser: Any, path: str) -> tuple[str, str]:
    """GET *path*; expect a redirect to the AS; the callback path it comes back to, and the scope."""
    response = browser.get(path)
    assert response.status_code == 302, response.content
    location = response["Location"]
    assert location.startswith("http://127.0.0.1:")
    scope = parse_qs(urlsplit(location).query).get("scope", [""])[0]
    callback = follow_to_callback(location)
    assert callback.startswith("http://localhost/mcp/callback/remote/?")
    parts = urlsplit(callback)
    return f"{parts.path}?{parts.query}", scope


@pytest.mark.parametrize("kind", ["database", "cache"])
def test_users_connect_step_up_and_logout(protected: Any, kind: str) -> None:
    from django.test import override_settings

    from mcpsync.contrib.django import token_store_for

    with override_settings(MCP_SERVERS={"demo": DEMO, "remote": remote_entry(protected.url)},
                           MCP_TOKEN_STORE=kind):
        alice, bob = _browser("alice"), _browser("bob")
        callback, scope = _to_authorization_server(alice, "/remote/tools")
        assert "mcp:read" in scope.split()
        # A forged state, or alice's callback in bob's browser, exchanges nothing.
        assert alice.get(callback.replace("state=", "state=forged")).status_code == 400
        assert bob.get(callback).status_code == 400
        back = alice.get(callback)
        assert back.status_code == 302 and back["Location"] == "/remote/tools"
        assert alice.get("/remote/tools").json() == {"tools": ["whoami", "write"]}
        assert alice.get(callback).status_code == 400  # replayed: one-shot state

        bob_callback, _ = _to_authorization_server(bob, "/mcp/connect/remote/?next=/remote/tools")
        assert bob.get(bob_callback)["Location"] == "/remote/tools"
        assert bob.get("/remote/tools").status_code == 200
        from django.contrib.auth import get_user_model

        users = {u.username: u for u in get_user_model().objects.all()}
        assert type(token_store_for(users["alice"])).__name__ == f"{kind.title()}TokenStore"
        tokens = {name: (token_store_for(users[name]).load(protected.url) or {}).get("tokens")
                  for name in ("alice", "bob")}
        assert tokens["alice"] and tokens["bob"]
        assert tokens["alice"]["access_token"] != tokens["bob"]["access_token"]

        # Step-up: "write" needs mcp:write: the same redirect, with the union of scopes.
        callback, scope = _to_authorization_server(alice, "/remote/call/write?text=hi")
        assert {"mcp:read", "mcp:write"} <= set(scope.split())
        back = alice.get(callback)
        assert back["Location"] == "/remote/call/write?text=hi"
        assert alice.get(back["Location"]).json() == {"text": "wrote hi"}

        # The MCP server restarts: tokens live in the database, nobody logs in again.
        protected.stop()
        down = alice.get("/remote/tools")
        assert down.status_code == 502 and down.json()["error"] in ("ServerStartError", "TransportError", "ConnectionClosed")
        protected.start()
        assert bob.get("/remote/tools").json() == {"tools": ["whoami", "write"]}

        assert alice.get("/mcp/connect/demo/").status_code == 404  # not a per-user server
        assert alice.get("/mcp/callback/nope/?state=x").status_code == 404
        # Logout forgets alice only.
        assert alice.post("/mcp/disconnect/remote/").status_code == 302
        assert alice.get("/remote/tools").status_code == 302
        assert bob.get("/remote/tools").status_code == 200


def test_anonymous_users_are_sent_to_log_in(protected: Any) -> None:
    from django.test import Client, override_settings

    with override_settings(MCP_SERVERS={"remote": remote_entry(protected.url)}):
        response = Client().get("/mcp/connect/remote/")
        assert response.status_code == 302 and response["Location"].startswith("/login?next=")
