"""The Flask and Django examples, with each framework's own test client, against the real demo server.

Concurrent requests come from a thread pool and share one client (one server
process); a killed server is replaced on the next request.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mcpsync.shared import SharedClient

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
THREADS, REQUESTS = 8, 48

pytestmark = pytest.mark.timeout(120)


def _load(path: Path, name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def flask_app() -> Iterator[tuple[Any, SharedClient]]:
    module = _load(EXAMPLES / "flask_app" / "app.py", "mcpsync_example_flask")
    try:
        yield module.app.test_client(), module.mcp
    finally:
        module.mcp.discard()  # the next test starts with no server process


@pytest.fixture
def django_app() -> Iterator[tuple[Any, SharedClient]]:
    root = str(EXAMPLES / "django_app")
    if root not in sys.path:
        sys.path.insert(0, root)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcpsite.settings")
    import django
    from django.test import Client as DjangoClient

    django.setup()
    from mcpsite.mcp import client

    try:
        yield DjangoClient(), client
    finally:
        client.discard()


def _server_pid(shared: SharedClient) -> int:
    return int(shared.get()._conn.transport.pid)  # type: ignore[union-attr,attr-defined]


def _json(response: Any) -> Any:
    return response.get_json() if hasattr(response, "get_json") else response.json()


def _exercise(get: Callable[[str], Any], shared: SharedClient) -> None:
    response = get("/tools")
    assert response.status_code == 200
    assert _json(response) == ["echo", "add", "countdown", "weather"]

    def one(i: int) -> float:
        response = get(f"/add?a={i}&b=0.5")
        assert response.status_code == 200, response.data if hasattr(response, "data") else response
        return float(_json(response)["sum"])

    with ThreadPoolExecutor(THREADS) as pool:
        sums = list(pool.map(one, range(REQUESTS)))
    assert sums == [i + 0.5 for i in range(REQUESTS)]
    assert shared.generation == 1  # every thread used the one client and one server process

    # The server dies (crash, OOM kill, deploy): the request that notices answers 502,
    # the next one runs on a new server process.
    old = _server_pid(shared)
    os.kill(old, signal.SIGKILL)
    # A stdio client does not respawn its server by itself: the first request sees the
    # broken connection; SharedClient then discards the client.
    failed = get("/add?a=1&b=1")
    assert failed.status_code == 502
    assert _json(failed)["error"] in ("ConnectionClosed", "ServerStartError")
    assert get("/add?a=1&b=1").status_code == 200
    assert shared.generation == 2
    assert _json(get("/add?a=2&b=2"))["sum"] == 4.0
    assert _server_pid(shared) != old


def test_flask_example(flask_app: tuple[Any, SharedClient]) -> None:
    client, shared = flask_app
    _exercise(client.get, shared)


def test_django_example(django_app: tuple[Any, SharedClient]) -> None:
    client, shared = django_app
    _exercise(client.get, shared)
