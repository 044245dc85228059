"""mcpsync.contrib.flask with Flask's test client, against the demo server and real OAuth servers."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import flask
import pytest
from cryptography.fernet import Fernet

from mcpsync.config import ConfigError
from mcpsync.exceptions import McpError
from mcpsync.contrib._server_set import ServerSetError
from mcpsync.contrib.flask import MCP
from tests.auth_server.conftest_auth import (  # noqa: F401
    auth_server,
    follow_to_callback,
    resource_server,
    ts_sdk_server,
)
from tests.contrib_support import DEMO, TEST_KEY, remote_entry, restartable

pytestmark = pytest.mark.timeout(120)


def _app(servers: Any, database: Path | None = None, **config: Any) -> tuple[flask.Flask, MCP]:
    """The test app; with *database*, Flask-SQLAlchemy on that SQLite file (set up before MCP)."""
    app = flask.Flask("contrib-test")
    app.config.update(SECRET_KEY="test-only", MCP_SERVERS=servers, MCP_DEFAULTS={"timeout": 20}, **config)
    db = None
    if database is not None:
        from flask_sqlalchemy import SQLAlchemy

        app.config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{database}"
        db = SQLAlchemy(app)
    mcp = MCP(app)
    if db is not None:
        with app.app_context():
            db.create_all()  # the app makes the mcpsync_token table, as the docs say

    @app.get("/add")
    def add() -> Any:
        arguments = {k: float(v) for k, v in flask.request.args.items()}
        return {"sum": float(mcp["demo"].call_tool("add", arguments).text)}

    @app.get("/remote/tools")
    def remote_tools() -> Any:
        with mcp.client_for_user("remote") as client:
            return {"tools": sorted(t.name for t in client.list_tools())}

    @app.get("/remote/call/<name>")
    def remote_call(name: str) -> Any:
        with mcp.client_for_user("remote") as client:
            return {"text": client.call_tool(name, dict(flask.request.args)).text}

    @app.get("/settings")
    def settings() -> Any:  # the app's own page, with the blueprint's disconnect form
        return flask.render_template_string(
            '<form method="post" action="{{ url_for(\'mcpsync.disconnect\', server=\'remote\') }}">'
            '<input type="hidden" name="csrf_token" value="{{ mcp_csrf_token() }}"></form>')

    @app.errorhandler(McpError)
    def failed(exc: McpError) -> Any:
        return {"error": type(exc).__name__}, 502

    return app, mcp


@pytest.fixture
def closing() -> Iterator[list[MCP]]:
    made: list[MCP] = []
    yield made
    for mcp in made:
        mcp.close()


def test_shared_client_threads_and_a_killed_server(closing: list[MCP]) -> None:
    app, mcp = _app({"demo": DEMO})
    closing.append(mcp)
    browser = app.test_client()
    with ThreadPoolExecutor(8) as pool:
        sums = list(pool.map(lambda i: browser.get(f"/add?a={i}&b=1").get_json()["sum"], range(32)))
    assert sums == [i + 1 for i in range(32)]
    shared = mcp["demo"]
    assert shared.generation == 1 and mcp.get_client() is shared and list(mcp) == ["demo"]
    os.kill(shared.get()._conn.transport.pid, signal.SIGKILL)  # type: ignore[attr-defined]
    with app.app_context():
        with pytest.raises(Exception) as info:
            mcp.call_tool("add", {"a": 1, "b": 1})
    assert type(info.value).__name__ in ("ConnectionClosed", "ServerStartError")
    assert browser.get("/add?a=2&b=2").get_json() == {"sum": 4.0}
    assert shared.generation == 2


def test_bad_settings_fail_in_init_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("H19_UNSET", raising=False)
    app = flask.Flask("bad")
    app.config["MCP_SERVERS"] = {"a": {"url": "${H19_UNSET}/mcp"}, "b": {"command": "no-such-h19"}}
    with pytest.raises(ServerSetError) as info:
        MCP(app)
    assert "H19_UNSET" in str(info.value) and "no-such-h19" in str(info.value)
    app.config["MCP_SERVERS"] = {"remote": remote_entry("http://127.0.0.1:1/mcp")}
    with pytest.raises(ConfigError, match="MCP_TOKEN_KEY"):
        MCP(app)
    app.config["MCP_TOKEN_KEY"] = TEST_KEY
    with pytest.raises(ConfigError, match="MCP_TOKEN_DIR"):
        MCP(app)
    app.config["MCP_TOKEN_STORE"] = "sqlalchemy"
    with pytest.raises(ConfigError, match=r"Flask-SQLAlchemy set up first"):
        MCP(app)
    app.config["MCP_TOKEN_STORE"] = "session"
    with pytest.raises(ConfigError, match="MCP_TOKEN_STORE must be one of 'file', 'sqlalchemy'"):
        MCP(app)


def test_cli_commands(closing: list[MCP]) -> None:
    app, mcp = _app({"demo": DEMO})
    closing.append(mcp)
    runner = app.test_cli_runner()
    result = runner.invoke(args=["mcp", "call", "add", "a=2", "b=5"])
    assert result.exit_code == 0 and result.output.strip() == "7"
    result = runner.invoke(args=["mcp", "tools"])
    assert "countdown(n?: integer, delay?: number)" in result.output
    result = runner.invoke(args=["mcp", "servers"])
    assert result.output.splitlines()[1].split()[:2] == ["demo", "stdio"]
    result = runner.invoke(args=["mcp", "servers", "--timeout", "5"])  # every command takes --timeout
    assert result.exit_code == 0 and result.output.splitlines()[1].split()[:2] == ["demo", "stdio"]
    result = runner.invoke(args=["mcp", "call", "nope"])
    assert result.exit_code == 4


# -- per-user OAuth -----------------------------------------------------------------------


def _to_authorization_server(browser: Any, path: str) -> tuple[str, str]:
    response = browser.get(path)
    assert response.status_code == 302, response.get_data(as_text=True)
    location = response.headers["Location"]
    assert location.startswith("http://127.0.0.1:")
    scope = parse_qs(urlsplit(location).query).get("scope", [""])[0]
    callback = follow_to_callback(location)
    assert callback.startswith("http://localhost/mcp/callback/remote?")
    return callback, scope


@pytest.fixture(params=["ts-sdk", "oidc-provider"])
def mcp_url(request: pytest.FixtureRequest) -> str:
    name = "ts_sdk_server" if request.param == "ts-sdk" else "resource_server"
    return str(request.getfixturevalue(name))


def _sealed_records(app: flask.Flask, tmp_path: Path) -> dict[str, str]:
    """What the token store keeps at rest: {owner (a file or a user id): stored text}."""
    if "sqlalchemy" not in app.extensions:
        return {path.name: path.read_text() for path in (tmp_path / "tokens").glob("*.json")}
    import sqlalchemy as sa

    with app.app_context():
        engine = app.extensions["sqlalchemy"].engine
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT user_key, sealed FROM mcpsync_token")).all()
    return {user: sealed for user, sealed in rows}


@pytest.fixture(params=["file", "sqlalchemy"])
def store_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The token store: a shared directory (MCP_TOKEN_DIR), or the app's Flask-SQLAlchemy database."""
    if request.param == "file":
        yield {"MCP_TOKEN_DIR": str(tmp_path / "tokens"), "MCP_TOKEN_KEY": TEST_KEY}
        return
    import flask_sqlalchemy  # noqa: F401  (the test extra installs it: a broken install fails here)
    yield {"database": tmp_path / "app.db", "MCP_TOKEN_KEY": TEST_KEY}


def test_users_connect_step_up_and_logout(mcp_url: str, store_settings: dict[str, Any], tmp_path: Path,
                                          closing: list[MCP]) -> None:
    app, mcp = _app({"demo": DEMO, "remote": remote_entry(mcp_url)}, **store_settings)
    closing.append(mcp)
    alice, bob = app.test_client(), app.test_client()  # two browsers: two users
    callback, scope = _to_authorization_server(alice, "/remote/tools")
    assert "mcp:read" in scope.split()
    assert alice.get(callback.replace("state=", "state=forged")).status_code == 400
    assert bob.get(callback).status_code == 400  # alice's login is not bob's
    back = alice.get(callback)
    assert back.status_code == 302 and back.headers["Location"] == "/remote/tools"
    assert alice.get("/remote/tools").get_json() == {"tools": ["whoami", "write"]}
    assert alice.get(callback).status_code == 400  # replayed

    bob_callback, _ = _to_authorization_server(bob, "/mcp/connect/remote?next=/remote/tools")
    assert bob.get(bob_callback).headers["Location"] == "/remote/tools"
    assert bob.get("/remote/tools").status_code == 200
    records = _sealed_records(app, tmp_path)
    assert len(records) == 2  # one record per user (the logins in progress are gone)
    for sealed in records.values():
        assert "access_token" not in sealed and "refresh_token" not in sealed  # encrypted at rest
    alice_id = _anon_id(alice)
    with app.test_request_context():
        assert mcp.token_store().load(mcp_url) is None  # a fresh session: a third user sees nothing
        flask.session["mcpsync.user"] = alice_id
        assert mcp.token_store().load(mcp_url)["tokens"]["access_token"]  # alice sees hers

    callback, scope = _to_authorization_server(alice, "/remote/call/write?text=hi")
    assert {"mcp:read", "mcp:write"} <= set(scope.split())
    back = alice.get(callback)
    assert back.headers["Location"] == "/remote/call/write?text=hi"
    assert alice.get(back.headers["Location"]).get_json() == {"text": "wrote hi"}

    assert alice.get("/mcp/connect/demo").status_code == 404  # not a per-user server
    assert alice.get("/mcp/callback/nope?state=x").status_code == 404
    assert alice.post("/mcp/disconnect/remote", data={"csrf_token": _csrf(alice)}).status_code == 302
    assert alice.get("/remote/tools").status_code == 302
    assert bob.get("/remote/tools").status_code == 200
    # Left: bob's tokens, and alice's new login in progress (the redirect above started it).
    fernet = Fernet(TEST_KEY.encode())  # read as the key holder would, whatever row each came from
    opened = [json.loads(fernet.decrypt(sealed if "sqlalchemy" in app.extensions else json.loads(sealed)["sealed"]))
              ["record"] for sealed in _sealed_records(app, tmp_path).values()]
    assert sorted("tokens" in record for record in opened) == [False, True]
    if "sqlalchemy" in app.extensions:
        with app.app_context():
            app.extensions["sqlalchemy"].engine.dispose()


def _csrf(browser: Any) -> str:
    """The CSRF token in the app's own form, as a browser reads it from the page."""
    page = browser.get("/settings").get_data(as_text=True)
    return page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]


def test_disconnect_needs_the_sessions_csrf_token(resource_server: str, tmp_path: Path,  # noqa: F811
                                                  closing: list[MCP]) -> None:
    app, mcp = _app({"remote": remote_entry(resource_server)},
                    MCP_TOKEN_DIR=str(tmp_path / "tokens"), MCP_TOKEN_KEY=TEST_KEY)
    closing.append(mcp)
    alice, bob = app.test_client(), app.test_client()
    token = _csrf(alice)
    callback, _ = _to_authorization_server(alice, "/remote/tools")
    assert alice.get(callback).status_code == 302
    assert _csrf(alice) == token  # one token per session: it survives requests and the login
    # A cross-site form posts with alice's cookies but cannot know her token.
    forged: list[dict[str, Any]] = [
        {}, {"data": {"next": "/"}}, {"data": {"csrf_token": "guess"}}, {"data": {"csrf_token": _csrf(bob)}},
        {"headers": {"X-CSRFToken": ""}}, {"headers": {"Origin": "https://evil.example"}},
    ]
    for attempt in forged:
        refused = alice.post("/mcp/disconnect/remote", **attempt)
        assert refused.status_code == 400 and b"CSRF token missing or incorrect" in refused.data
        assert alice.get("/remote/tools").get_json() == {"tools": ["whoami", "write"]}  # still connected
    # The app's own form (or a script sending the header) works.
    assert alice.post("/mcp/disconnect/remote", headers={"X-CSRFToken": token}).status_code == 302
    assert alice.get("/remote/tools").status_code == 302  # logged out: back to the login
    assert alice.post("/mcp/disconnect/remote", data={"csrf_token": _csrf(alice), "next": "/x"}).headers[
        "Location"] == "/x"


def test_a_flask_wtf_token_is_accepted_too(closing: list[MCP]) -> None:
    from flask_wtf.csrf import generate_csrf

    app, mcp = _app({"demo": DEMO})
    closing.append(mcp)
    app.get("/wtf")(generate_csrf)  # the token a FlaskForm puts in the app's forms
    browser = app.test_client()
    wtf = browser.get("/wtf").get_data(as_text=True)
    assert browser.post("/mcp/disconnect/demo", data={"csrf_token": "forged"}).status_code == 400
    # One hidden field, Flask-WTF's token: accepted by both (then 404: demo has no per-user login).
    assert browser.post("/mcp/disconnect/demo", data={"csrf_token": wtf}).status_code == 404


def test_a_server_restart_keeps_users_connected(auth_server: str, tmp_path: Path,  # noqa: F811
                                                closing: list[MCP]) -> None:
    for protected in restartable(auth_server):
        app, mcp = _app({"remote": remote_entry(protected.url)},
                        MCP_TOKEN_DIR=str(tmp_path / "tokens"), MCP_TOKEN_KEY=TEST_KEY)
        closing.append(mcp)
        browser = app.test_client()
        callback, _ = _to_authorization_server(browser, "/remote/tools")
        assert browser.get(callback).status_code == 302
        protected.stop()
        down = browser.get("/remote/tools")
        assert down.status_code == 502
        assert down.get_json()["error"] in ("ServerStartError", "TransportError", "ConnectionClosed")
        protected.start()
        assert browser.get("/remote/tools").get_json() == {"tools": ["whoami", "write"]}


def _docs_app_source() -> str:
    """The Python block of docs/flask.rst's "A complete minimal app", as the reader copies it."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "flask.rst").read_text()
    section = text.split("A complete minimal app\n", 1)[1]
    block = section.split(".. code-block:: python\n\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if line and not line.startswith("   "):
            break
        lines.append(line[3:])
    return "\n".join(lines)


def test_the_docs_minimal_app(resource_server: str, tmp_path: Path,  # noqa: F811
                              monkeypatch: pytest.MonkeyPatch) -> None:
    import flask_sqlalchemy  # noqa: F401  (the test extra installs it: a broken install fails here)
    source = _docs_app_source()
    assert "db.init_app(app)" in source and "https://mcp.example.com/mcp" in source
    monkeypatch.setenv("FLASK_SECRET_KEY", "test-only")
    monkeypatch.setenv("MCP_TOKEN_KEY", TEST_KEY)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'app.db'}")
    namespace: dict[str, Any] = {"__name__": "docs_app"}
    exec(compile(source.replace("https://mcp.example.com/mcp", resource_server), "flask.rst", "exec"),
         namespace)
    app, mcp = namespace["create_app"](), namespace["mcp"]
    try:
        browser = app.test_client()
        assert browser.get("/add?a=1&b=2").get_json() == {"sum": 3.0}
        response = browser.get("/repos")
        assert response.status_code == 302
        callback = follow_to_callback(response.headers["Location"])
        assert callback.startswith("http://localhost/mcp/callback/github?")
        assert browser.get(callback).headers["Location"] == "/repos"
        assert browser.get("/repos").get_json() == {"tools": ["whoami", "write"]}
        assert [user for user in _sealed_records(app, tmp_path)] == [f"session:{_anon_id(browser)}"]
    finally:
        with app.app_context():
            mcp.close()
            namespace["db"].engine.dispose()


def _anon_id(browser: Any) -> str:
    with browser.session_transaction() as session:
        return str(session["mcpsync.user"])
