"""mcpsync over HTTP against real servers: the official SDK (``mcp`` 2.3.0) and server-everything.

SDK modes: Streamable HTTP with SSE or JSON replies, stateful or stateless, and legacy HTTP+SSE.
The SDK drops progress and log notifications in JSON-response mode and cannot send server-to-client
requests there or when stateless, so those features are tested where the server supports them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcpsync
from mcpsync import types

SERVERS = Path(__file__).resolve().parent / "servers"

pytestmark = pytest.mark.timeout(90)

MODES = {
    "sse": ["--transport", "streamable"],
    "json": ["--transport", "streamable", "--json"],
    "sse-stateless": ["--transport", "streamable", "--stateless"],
    "json-stateless": ["--transport", "streamable", "--json", "--stateless"],
    "legacy": ["--transport", "sse"],
}
STREAMING = {"sse", "sse-stateless", "legacy"}  # progress and logs reach the client
SERVER_REQUESTS = {"sse", "legacy"}  # sampling, elicitation, roots


_drains: dict[int, threading.Thread] = {}


def _start(argv: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    seen = []
    for _ in range(20):  # a banner may come first
        line = proc.stdout.readline()
        seen.append(line)
        if line.startswith("PORT=") or not line:
            break
    if not line.startswith("PORT="):
        proc.kill()
        proc.wait()
        pytest.fail(f"test server did not start: {seen!r}")
    # Keep the pipe drained so a chatty server never blocks on stdout.
    drain = threading.Thread(target=proc.stdout.read, name="test-drain", daemon=True)
    drain.start()
    _drains[proc.pid] = drain
    return proc, int(line.strip().split("=", 1)[1])


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    drain = _drains.pop(proc.pid, None)
    if drain is not None:
        drain.join(5)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture
def sdk_http(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    mode = request.param
    proc, port = _start([sys.executable, str(SERVERS / "http_sdk.py"), *MODES[mode]])
    path = "/sse" if mode == "legacy" else "/mcp"
    try:
        yield mode, f"http://127.0.0.1:{port}{path}"
    finally:
        _stop(proc)


def _client(url: str, **kw: Any) -> mcpsync.Client:
    kw.setdefault("timeout", 20)
    kw.setdefault("mode", "legacy")
    return mcpsync.Client.http(url, **kw)


@pytest.mark.parametrize("sdk_http", sorted(MODES), indirect=True)
def test_core_features(sdk_http: tuple[str, str]) -> None:
    mode, url = sdk_http
    with _client(url) as c:
        expected_transport = "LegacySSETransport" if mode == "legacy" else "StreamableHTTPTransport"
        assert type(c._conn.transport.active).__name__ == expected_transport  # type: ignore[union-attr]
        assert c.server_info.name == "sdk-test-server"
        assert c.instructions == "Test server for mcpsync."
        assert "echo" in [t.name for t in c.list_tools()]
        assert c.call_tool("echo", {"text": "hé"}).text == "hé"
        assert c.call_tool("add", {"a": 2, "b": 3}).structured_content == {"sum": 5}
        assert c.call_tool("fail", {"message": "nope"}).is_error
        assert len(c.list_resources()) == 8  # paginated: 3 per page
        assert c.read_resource("memo://note/1").contents[0].text == "note 1"  # type: ignore[union-attr]
        assert len(c.list_resource_templates()) == 4
        assert [p.name for p in c.list_prompts()][:1] == ["greet"]
        assert c.get_prompt("greet", {"name": "Ann"}).messages
        assert c.complete(types.PromptReference(name="greet"), "style", "f").values is not None
        c.ping()
        c.set_logging_level("debug")


@pytest.mark.parametrize("sdk_http", sorted(STREAMING), indirect=True)
def test_progress_and_logs_over_streams(sdk_http: tuple[str, str], recorder: Any) -> None:
    _, url = sdk_http
    logs = recorder()
    progress = recorder()
    with _client(url, logging_handler=logs) as c:
        c.set_logging_level("debug")
        assert "3" in c.call_tool("slow", {"steps": 3, "delay": 0.01}, progress=progress).text
        progress.wait(3)
        c.call_tool("log", {"levels": ["info", "error"]})
        assert [p.level for p in logs.wait(2)] == ["info", "error"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("sdk_http", sorted(SERVER_REQUESTS), indirect=True)
def test_server_to_client_requests(sdk_http: tuple[str, str]) -> None:
    _, url = sdk_http

    def sample(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="42"), model="m")

    def elicit(params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Ann"})

    with _client(url, sampling_handler=sample, elicitation_handler=elicit, roots=[("file:///tmp", "tmp")]) as c:
        assert c.call_tool("sample", {"prompt": "q"}).text == "sampled by m"
        elicited = c.call_tool("elicit_form", {"message": "who?"})
        assert elicited.structured_content == {"action": "accept", "content": {"name": "Ann"}}
        assert c.call_tool("list_roots", {}).text == "file:///tmp"


@pytest.mark.parametrize("sdk_http", ["sse", "json", "legacy"], indirect=True)
def test_many_threads_share_one_http_client(sdk_http: tuple[str, str]) -> None:
    _, url = sdk_http
    errors: list[BaseException] = []
    with _client(url) as c:
        def work(i: int) -> None:
            try:
                for j in range(3):
                    assert c.call_tool("echo", {"text": f"{i}-{j}"}).text == f"{i}-{j}"
            except BaseException as exc:  # collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert errors == []


def test_modern_era_discovery_over_streamable_http() -> None:
    proc, port = _start([sys.executable, str(SERVERS / "http_sdk.py"), "--transport", "streamable"])
    try:
        with mcpsync.Client.http(f"http://127.0.0.1:{port}/mcp", timeout=20) as c:
            assert c.protocol_version == "2026-07-28"
            assert c.call_tool("echo", {"text": "modern"}).text == "modern"
    finally:
        _stop(proc)


# -- server-everything (npm) ----------------------------------------------------------------------

#: Make an Express app that binds every interface listen on 127.0.0.1, and report its port.
_LOOPBACK = (
    "import net from 'node:net';"
    "const listen = net.Server.prototype.listen;"
    "net.Server.prototype.listen = function (...a) {"
    "  if (typeof a[0] === 'number' || (typeof a[0] === 'string' && /^[0-9]+$/.test(a[0]))) {"
    "    a[0] = Number(a[0]); if (typeof a[1] !== 'string') a.splice(1, 0, '127.0.0.1'); }"
    "  this.once('listening', () => process.stdout.write('PORT=' + this.address().port + '\\n'));"
    "  return listen.apply(this, a); };"
)


@pytest.fixture(params=["streamableHttp", "sse"])
def everything_http(request: pytest.FixtureRequest, everything_server: list[str]) -> Iterator[tuple[str, str]]:
    node, script = everything_server[0], everything_server[1]
    env = {**os.environ, "PORT": "0"}
    argv = [node, "--import", "data:text/javascript," + _LOOPBACK, script, request.param]
    proc, port = _start(argv, env)
    path = "/mcp" if request.param == "streamableHttp" else "/sse"
    try:
        yield request.param, f"http://127.0.0.1:{port}{path}"
    finally:
        _stop(proc)


@pytest.mark.node
def test_everything_server_over_http(everything_http: tuple[str, str], recorder: Any) -> None:
    kind, url = everything_http
    progress = recorder()

    def sample(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="sampled"), model="m")

    with _client(url, sampling_handler=sample) as c:
        names = [t.name for t in c.list_tools()]
        assert "echo" in names
        assert "hi" in c.call_tool("echo", {"message": "hi"}).text
        slow = "trigger-long-running-operation"
        if slow in names:
            c.call_tool(slow, {"duration": 0.2, "steps": 2}, progress=progress)
            progress.wait(2)
        if "trigger-sampling-request" in names:
            assert "sampled" in c.call_tool("trigger-sampling-request", {"prompt": "x"}).text
        assert c.list_resources()
        assert c.list_prompts()
        c.ping()
