"""``examples/flask_oauth_app.py`` (the web-app flow in docs/auth.rst), run for real.

Flask's test client is the app server and the user's browser at once; the
authorization servers and protected MCP servers are the real ones of
``tests/auth_server`` (the TypeScript SDK's and oidc-provider).  Covered: the
redirect to log in, the callback, per-user records in a shared FileTokenStore,
step-up through the same redirect, a forged or replayed callback, and logout.
"""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from flask.testing import FlaskClient

from tests.auth_server.conftest_auth import (  # noqa: F401
    auth_server,
    follow_to_callback,
    resource_server,
    ts_sdk_server,
)

pytestmark = pytest.mark.timeout(90)

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "flask_oauth_app.py"


def _example() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("flask_oauth_app", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["ts-sdk", "oidc-provider"])
def mcp_url(request: pytest.FixtureRequest) -> str:
    name = "ts_sdk_server" if request.param == "ts-sdk" else "resource_server"
    return str(request.getfixturevalue(name))


def _login(browser: FlaskClient, path: str) -> tuple[str, str]:
    """GET *path*, expect a redirect to the authorization server; (callback URL, scope asked)."""
    response = browser.get(path)
    assert response.status_code == 302, response.get_data(as_text=True)
    authorize = response.headers["Location"]
    assert authorize.startswith("http://127.0.0.1:")  # the AS, not this app
    scope = parse_qs(urlsplit(authorize).query).get("scope", [""])[0]
    callback = follow_to_callback(authorize)  # the user logs in at the AS
    assert callback.startswith("http://localhost/oauth/callback?")
    return callback, scope


def test_flask_example_logs_each_user_in_and_steps_up(
    mcp_url: str, tmp_path: Path
) -> None:
    app = _example().create_app(
        mcp_url=mcp_url, token_dir=str(tmp_path / "tokens"), secret_key="test-only"
    )
    alice, bob = app.test_client(), app.test_client()  # two browsers (cookie jars)
    callback, scope = _login(alice, "/tools")
    assert "mcp:read" in scope.split()
    # A forged state never reaches the token endpoint.
    forged = alice.get(callback.replace("state=", "state=forged"))
    assert forged.status_code == 400
    back = alice.get(callback)
    assert back.status_code == 302 and back.headers["Location"].startswith("/tools")
    assert alice.get("/tools").get_json() == {"tools": ["whoami", "write"]}
    # Replaying the callback is refused (one-shot state).
    assert alice.get(callback).status_code == 400

    # Another browser is another user: a login of their own, a record of their own.
    bob_callback, _ = _login(bob, "/tools")
    assert bob.get(bob_callback).status_code == 302
    assert bob.get("/tools").status_code == 200
    records = list((tmp_path / "tokens").glob("*.json"))
    assert len(records) == 2

    # Step-up: "write" needs mcp:write -> the same redirect, with the union of scopes.
    callback, scope = _login(alice, "/call/write?text=hi")
    assert {"mcp:read", "mcp:write"} <= set(scope.split())
    back = alice.get(callback)
    assert back.headers["Location"].startswith("/call/write?text=hi")
    assert alice.get(back.headers["Location"]).get_json() == {"text": "wrote hi"}

    # Logout forgets alice only.
    assert alice.post("/logout").get_json() == {"ok": True}
    assert len(list((tmp_path / "tokens").glob("*.json"))) == 1  # bob's
    assert alice.get("/tools").status_code == 302
    assert bob.get("/tools").status_code == 200
