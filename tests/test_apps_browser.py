"""The MCP Apps host pages of Django and Flask in a real browser: Debian's chromium, headless.

Each site is served by a WSGI server on 127.0.0.1; the browser opens the host page on
``http://localhost:PORT`` and the sandbox is ``http://127.0.0.1:PORT`` (another origin, same
server).  The app (``tests/servers/apps_server.py``'s dashboard) runs its own script: it shows
its input and result, calls an app-only tool, a model-only tool and the demo server's ``add``
through the host, fetches a listener on 127.0.0.1 it did not declare, and reports its size.
Two users in turn: nothing of the first reaches the second.  Few tests, one browser for all.
"""

from __future__ import annotations

import json
import shutil
import socketserver
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest

from tests.contrib_support import DEMO, django_site, require

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SERVER = str(Path(__file__).resolve().parent / "servers" / "apps_server.py")

pytestmark = pytest.mark.timeout(120)


class _Threading(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serve(app: Any) -> Iterator[int]:
    """*app* (WSGI) on 127.0.0.1; its port.  Stopped, its threads joined, on exit."""
    server = make_server("127.0.0.1", 0, app, server_class=_Threading, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, name="test-wsgi", daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture(scope="module")
def probe() -> Iterator[tuple[str, list[str]]]:
    """A listener the app is not allowed to reach: its URL, and the paths it was asked for."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="test-probe", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/probe", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    require(f"{' and '.join(missing)} missing: apt-get install chromium chromium-driver" if missing else None)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def servers(probe_url: str) -> dict[str, Any]:
    return {"apps": {"command": sys.executable, "args": [SERVER], "env": {"APPS_PROBE_URL": probe_url}, "apps": True},
            "demo": DEMO}


@pytest.fixture(params=["django", "flask"])
def site(request: pytest.FixtureRequest, probe: tuple[str, list[str]],
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """(framework, port) of a running site whose sandbox origin is 127.0.0.1:port."""
    if request.param == "django":
        django_site(tmp_path_factory.mktemp("django") / "db.sqlite3")
        from django.core.handlers.wsgi import WSGIHandler
        from django.test import override_settings

        from mcpsync.contrib.django import _state

        handler = WSGIHandler()
        with serve(handler) as port:
            with override_settings(MCP_SERVERS=servers(probe[0]), MCP_APPS_SANDBOX_ORIGIN=f"http://127.0.0.1:{port}"):
                try:
                    yield "django", port
                finally:
                    _state.reset()
        return
    import flask

    from mcpsync.contrib.flask import MCP

    app = flask.Flask("apps-browser")
    app.config.update(SECRET_KEY="test-only", MCP_SERVERS=servers(probe[0]))
    mcp = MCP(app)
    with serve(app) as port:
        app.config["MCP_APPS_SANDBOX_ORIGIN"] = f"http://127.0.0.1:{port}"
        try:
            yield "flask", port
        finally:
            mcp.close()


def sign_in(browser: Any, framework: str, port: int, user: str) -> None:
    """A fresh browser session (the host origin's cookies dropped) for *user*."""
    browser.get(f"http://localhost:{port}/mcp/apps/sandbox/")  # any page of the host origin (a 404)
    browser.delete_all_cookies()
    if framework == "django":  # Flask's MCP knows users by their session
        browser.get(f"http://localhost:{port}/login?user={user}")


def open_app(browser: Any, port: int, note: str) -> dict[str, Any]:
    """Open the dashboard's page with *note*; once the app is done, what it shows."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    arguments = quote(json.dumps({"note": note}))
    browser.get(f"http://localhost:{port}/mcp/apps/apps/dashboard/?arguments={arguments}")
    frame = browser.find_element(By.ID, "mcp-app-frame")
    # The app's last step is its size: the host sets the frame's height from it.
    WebDriverWait(browser, 60).until(lambda b: frame.value_of_css_property("height") == "321px")
    browser.switch_to.frame(frame)
    browser.switch_to.frame(browser.find_element(By.TAG_NAME, "iframe"))
    try:
        shown = {e.get_attribute("id"): e.text for e in browser.find_elements(By.TAG_NAME, "pre")}
        shown["origin"] = browser.execute_script("return String(window.origin)")
    finally:
        browser.switch_to.default_content()
    return shown


def test_apps_in_a_real_browser(browser: Any, site: tuple[str, int], probe: tuple[str, list[str]]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    framework, port = site
    probe_url, hits = probe
    sign_in(browser, framework, port, "alice")
    shown = open_app(browser, port, "alice-secret")
    assert json.loads(shown["input"]) == {"note": "alice-secret"}
    assert json.loads(shown["result"]) == {"note": "alice-secret", "apps": True}
    assert json.loads(shown["context"])["toolInfo"]["tool"]["name"] == "dashboard"
    assert shown["app-call"] == "ok: refreshed 2"  # an app-only tool, through the host
    assert shown["model-call"].startswith("refused: ") and "visibility is ['model']" in shown["model-call"]
    assert shown["other-call"].startswith("refused: ") and "lists no such tool" in shown["other-call"]
    # The fetch to an undeclared origin: blocked by the CSP, never sent.
    assert shown["fetch"] == "blocked" and shown["csp"].startswith(f"connect-src {probe_url}") and hits == []
    assert shown["origin"] == "null"  # the app's own frame is an opaque origin
    alice_token = browser.execute_script("return JSON.parse(document.getElementById('mcp-app-config').textContent).csrfToken")

    # Teardown: the app is told, answers, and the frame goes.
    browser.find_element(By.ID, "mcp-app-close").click()
    WebDriverWait(browser, 10).until(lambda b: not b.find_elements(By.ID, "mcp-app-frame"))
    assert {"level": "info", "data": "teardown: closed by the user"} in browser.execute_script("return window.mcpApp.log")

    # Another user, in the same browser: nothing of alice's reaches bob, and her token is no use.
    sign_in(browser, framework, port, "bob")
    shown = open_app(browser, port, "bob-note")
    assert json.loads(shown["input"]) == {"note": "bob-note"} and "alice" not in browser.page_source
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "const cfg = JSON.parse(document.getElementById('mcp-app-config').textContent);"
        "fetch(cfg.callUrl, {method: 'POST', headers: {'Content-Type': 'application/json', [cfg.csrfHeader]: arguments[0]},"
        " body: JSON.stringify({name: 'refresh', arguments: {n: 1}})}).then(r => done(r.status), e => done(String(e)));",
        alice_token,
    )
    assert status in (400, 403)  # refused (400 where a framework-wide CSRF check answers first)
