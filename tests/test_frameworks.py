"""The Flask and Django examples (on mcpsync.contrib), with each framework's test client, against the demo server.

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
from tests.contrib_support import EXAMPLES, django_site

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
    app = module.create_app()
    shared = app.extensions["mcp"].servers.get_client("demo")
    try:
        yield app.test_client(), shared
    finally:
        app.extensions["mcp"].servers.close()  # the next test starts with no server process


@pytest.fixture
def django_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, SharedClient]]:
    django_site(tmp_path_factory.mktemp("django") / "db.sqlite3")
    from django.test import Client as DjangoClient

    from mcpsync.contrib.django import _state, get_client

    try:
        yield DjangoClient(), get_client("demo")
    finally:
        _state.reset()


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
