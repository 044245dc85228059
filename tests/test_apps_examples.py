"""The MCP Apps examples run as their docs say (``python examples/flask_apps.py`` and
``examples/django_apps.py``), and their pages work over real HTTP: the host page, the sandbox
on the other origin, and the app's button's call (``increment``, app-only) with the CSRF token.
In a real browser: ``tests/test_apps_browser.py``."""

from __future__ import annotations

import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests

from tests.contrib_support import EXAMPLES, free_port

pytestmark = pytest.mark.timeout(90)


def _wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the example exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail("the example did not start listening")


@pytest.mark.parametrize("example", ["flask_apps.py", "django_apps.py"])
def test_example(example: str) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(EXAMPLES / example)], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, proc)
        with requests.Session() as browser:
            index = browser.get(f"http://localhost:{port}/", timeout=30)
            link = html.unescape(re.search(r'href="([^"]+)"', index.text).group(1))
            page = browser.get(f"http://localhost:{port}{link}", timeout=30)
            assert page.status_code == 200, page.text
            config = json.loads(re.search(r'type="application/json">(.*?)</script>', page.text, re.S).group(1))
            assert config["result"]["structuredContent"] == {"value": 41}
            src = html.unescape(re.search(r'<iframe id="mcp-app-frame"[^>]* src="([^"]+)"', page.text, re.S).group(1))
            assert src.startswith(f"http://127.0.0.1:{port}/mcp/apps/sandbox/?s=")
            sandbox = requests.get(src, timeout=30)
            assert sandbox.status_code == 200
            assert sandbox.headers["Content-Security-Policy"].endswith(f", frame-ancestors http://localhost:{port}")
            call = browser.post(f"http://localhost:{port}{config['callUrl']}",
                                json={"name": "increment", "arguments": {"value": 41}},
                                headers={config["csrfHeader"]: config["csrfToken"]}, timeout=30)
            assert call.status_code == 200 and call.json()["structuredContent"] == {"value": 42}
    finally:
        proc.send_signal(signal.SIGINT)  # as Ctrl-C: the app closes its MCP server at exit
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
