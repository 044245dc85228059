"""The MCP Apps host pages of mcpsync.contrib.django and .flask, through each framework's test client.

``localhost`` is the host pages' origin and ``127.0.0.1`` the sandbox's.  The servers: the
official-SDK Apps server (``tests/servers/apps_server.py``) and the demo server (whose ``add`` an
app of the Apps server must not reach); per-user clients against a real authorization server.
The same pages in a real browser: ``tests/test_apps_browser.py``.
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from mcpsync import types
from mcpsync.config import ConfigError
from tests.auth_server.conftest_auth import auth_server, follow_to_callback  # noqa: F401
from tests.contrib_support import DEMO, django_site, remote_entry, restartable

APPS = {"command": sys.executable, "args": [str(Path(__file__).resolve().parent / "servers" / "apps_server.py")],
        "apps": True}
SERVERS = {"apps": APPS, "demo": DEMO}
SANDBOX = "http://127.0.0.1"
DASHBOARD_CSP = types.AppResource("ui://x", "", csp=types.AppCsp(
    ("https://api.example.com",), ("https://cdn.example.com",))).csp_header()

pytestmark = pytest.mark.timeout(120)


class Site:
    """One framework's app, seen by one user's browser (cookies kept)."""

    def get(self, path: str, host: str = "localhost") -> tuple[int, str, dict[str, str]]:
        raise NotImplementedError

    def post(self, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        raise NotImplementedError


class DjangoSite(Site):
    def __init__(self, user: str) -> None:
        from django.test import Client

        self.client = Client(enforce_csrf_checks=True)
        assert self.client.get(f"/login?user={user}", HTTP_HOST="localhost").status_code == 200

    def get(self, path: str, host: str = "localhost") -> tuple[int, str, dict[str, str]]:
        response = self.client.get(path, HTTP_HOST=host)
        return response.status_code, response.content.decode(), dict(response.items())

    def post(self, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()}
        response = self.client.post(path, body if isinstance(body, str) else json.dumps(body),
                                    content_type="application/json", HTTP_HOST="localhost", **extra)
        return response.status_code, response.json() if response["Content-Type"] == "application/json" else None


class FlaskSite(Site):
    def __init__(self, app: Any) -> None:
        self.client = app.test_client()

    def get(self, path: str, host: str = "localhost") -> tuple[int, str, dict[str, str]]:
        response = self.client.get(path, base_url=f"http://{host}")
        return response.status_code, response.get_data(as_text=True), dict(response.headers)

    def post(self, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        response = self.client.post(path, data=body if isinstance(body, str) else json.dumps(body),
                                    headers={"Content-Type": "application/json", **headers},
                                    base_url="http://localhost")
        return response.status_code, response.get_json()


@pytest.fixture(params=["django", "flask"])
def sites(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``make(user) -> Site`` for the framework, with SERVERS and the sandbox origin set."""
    if request.param == "django":
        django_site(tmp_path_factory.mktemp("django") / "db.sqlite3")
        from django.test import override_settings

        from mcpsync.contrib.django import _state

        with override_settings(MCP_SERVERS=SERVERS, MCP_APPS_SANDBOX_ORIGIN=SANDBOX):
            try:
                yield DjangoSite
            finally:
                _state.reset()
        return
    import flask

    from mcpsync.contrib.flask import MCP

    app = flask.Flask("apps-test")
    app.config.update(SECRET_KEY="test-only", MCP_SERVERS=SERVERS, MCP_APPS_SANDBOX_ORIGIN=SANDBOX, TESTING=True)
    mcp = MCP(app)
    try:
        yield lambda user: FlaskSite(app)
    finally:
        mcp.close()


def page_parts(text: str) -> tuple[str, dict[str, Any], str]:
    """The iframe's src, the bridge's configuration and the iframe's allow attribute."""
    src = html.unescape(re.search(r'<iframe id="mcp-app-frame"[^>]* src="([^"]*)"', text, re.S).group(1))
    allow = html.unescape(re.search(r'allow="([^"]*)"', text).group(1))
    config = re.search(r'<script id="mcp-app-config" type="application/json">(.*?)</script>', text, re.S).group(1)
    return src, json.loads(config), allow


def app_path(tool: str, arguments: dict[str, Any] | None = None, server: str = "apps") -> str:
    query = f"?arguments={quote(json.dumps(arguments))}" if arguments is not None else ""
    return f"/mcp/apps/{server}/{tool}/{query}"


def test_host_page_sandbox_and_bridge(sites: Any) -> None:
    alice = sites("alice")
    status, text, headers = alice.get(app_path("dashboard", {"note": "alice's note"}))
    assert status == 200 and headers["Cache-Control"] == "no-store", text
    src, config, allow = page_parts(text)
    assert src.startswith(f"{SANDBOX}/mcp/apps/sandbox/?s=") and allow == "clipboard-write"
    assert config["sandboxOrigin"] == SANDBOX and config["callUrl"] == "/mcp/apps/apps/call/"
    assert config["arguments"] == {"note": "alice's note"}
    assert config["result"]["structuredContent"] == {"note": "alice's note", "apps": True}
    assert config["tool"]["name"] == "dashboard" and config["html"].startswith("<!doctype html>")
    assert config["csp"] == {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"]}
    assert config["permissions"] == {"clipboardWrite": {}}
    assert "<h1>Dashboard</h1>" in config["html"] and "<h1>Dashboard" not in text  # escaped in the page

    # The sandbox: on its own origin only, with the app's CSP, framed by the host page only.
    sandbox_path = src[len(SANDBOX):]
    status, proxy, headers = alice.get(sandbox_path, host="127.0.0.1")
    assert status == 200 and '"http://localhost"' in proxy
    assert headers["Content-Security-Policy"] == f"{DASHBOARD_CSP}, frame-ancestors http://localhost"
    assert "alice" not in proxy  # no user data on the sandbox origin
    assert alice.get(sandbox_path, host="localhost")[0] == 404
    assert alice.get(sandbox_path.replace("?s=", "?s=x"), host="127.0.0.1")[0] == 400
    assert alice.get("/mcp/apps/sandbox/", host="127.0.0.1")[0] == 400

    # No app, no page.
    assert alice.get(app_path("plain"))[0] == 404
    assert alice.get(app_path("nope"))[0] == 404
    assert alice.get(app_path("dashboard", server="nope"))[0] == 404
    assert alice.get(app_path("add", {"a": 1, "b": 2}, server="demo"))[0] == 404
    assert alice.get("/mcp/apps/apps/dashboard/?arguments=[1]")[0] == 400
    assert alice.get("/mcp/apps/apps/dashboard/?arguments={bad")[0] == 400


def test_calls_from_the_app(sites: Any) -> None:
    alice, bob = sites("alice"), sites("bob")
    _, config, _ = page_parts(alice.get(app_path("dashboard", {"note": "n"}))[1])
    _, bob_config, _ = page_parts(bob.get(app_path("dashboard", {"note": "bob's"}))[1])
    csrf = {config["csrfHeader"]: config["csrfToken"]}
    call = config["callUrl"]

    status, result = alice.post(call, {"name": "refresh", "arguments": {"n": 5}}, csrf)
    assert status == 200 and result["content"][0]["text"] == "refreshed 5"
    status, result = alice.post(call, {"name": "plain"}, csrf)  # no _meta.ui: visible to apps too
    assert status == 200 and result["content"][0]["text"] == "apps=True"
    status, refused = alice.post(call, {"name": "model_only", "arguments": {}}, csrf)
    assert status == 403 and "visibility is ['model']" in refused["error"]["message"]
    status, refused = alice.post(call, {"name": "add", "arguments": {"a": 1, "b": 2}}, csrf)  # the demo's
    assert status == 403 and "lists no such tool" in refused["error"]["message"]
    assert alice.post(call, {"arguments": {}}, csrf)[0] == 400
    assert alice.post(call, "not json", csrf)[0] == 400
    # CSRF: no token, or another user's, is refused before anything is called (a 403, or a 400
    # where a framework-wide check answers first).
    assert alice.post(call, {"name": "refresh", "arguments": {"n": 1}}, {})[0] in (400, 403)
    assert bob_config["csrfToken"] != config["csrfToken"]
    assert bob.post(call, {"name": "refresh", "arguments": {"n": 1}}, csrf)[0] in (400, 403)
    assert bob.post(call, {"name": "refresh", "arguments": {"n": 1}},
                    {bob_config["csrfHeader"]: bob_config["csrfToken"]})[0] == 200


def test_the_sandbox_origin_must_be_set_and_apart(sites: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    site = sites("alice")
    for origin in (None, "http://localhost", "not a url"):
        if isinstance(site, DjangoSite):
            from django.test import override_settings

            context: Any = override_settings(MCP_APPS_SANDBOX_ORIGIN=origin)
        else:
            monkeypatch.setitem(site.client.application.config, "MCP_APPS_SANDBOX_ORIGIN", origin)
            context = monkeypatch.context()
        with context, pytest.raises(ConfigError, match="MCP_APPS_SANDBOX_ORIGIN"):
            site.get(app_path("dashboard", {"note": "n"}))


# -- per-user servers: the bridge calls with the user's own tokens ----------------------------


def test_an_apps_calls_go_through_the_users_own_client(auth_server: str) -> None:  # noqa: F811
    django_site(Path("unused"))  # (set up already by the tests above in this process, else now)
    from django.test import override_settings

    from mcpsync.contrib.django import _state

    for protected in restartable(auth_server):
        with override_settings(MCP_SERVERS={"remote": remote_entry(protected.url)}, MCP_APPS_SANDBOX_ORIGIN=SANDBOX):
            try:
                alice, bob = DjangoSite("alice"), DjangoSite("bob")
                # Each browser has its own CSRF cookie; the header must match it.
                csrf = {}
                for name, site in (("alice", alice), ("bob", bob)):
                    secret = name[0] * 32
                    site.client.cookies["csrftoken"] = secret
                    csrf[name] = {"X-CSRFToken": secret}
                # alice connects the server (a real login); bob does not.
                start = alice.client.get("/mcp/connect/remote/?next=/", HTTP_HOST="localhost")
                parts = urlsplit(follow_to_callback(start["Location"]))
                assert alice.client.get(f"{parts.path}?{parts.query}", HTTP_HOST="localhost").status_code == 302
                # whoami has no UI: no page, but an app of that server may call it.
                assert alice.get(app_path("whoami", server="remote"))[0] == 404
                status, result = alice.post("/mcp/apps/remote/call/", {"name": "whoami"}, csrf["alice"])
                assert status == 200 and result["content"][0]["text"] == "alice"
                # bob's calls never use alice's tokens: he must connect first.
                status, result = bob.post("/mcp/apps/remote/call/", {"name": "whoami"}, csrf["bob"])
                assert status == 401 and "connect 'remote' again" in result["error"]["message"]
                assert "http" not in result["error"]["message"]  # no authorization URL for the app
                assert bob.post("/mcp/apps/remote/call/", {"name": "whoami"}, csrf["alice"])[0] == 403
            finally:
                _state.reset()
