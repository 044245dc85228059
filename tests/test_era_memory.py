"""Era memory: ``discover_result``, ``prior_discover=`` and the re-probe on a stale prior.

The HTTP servers here count every ``server/discover`` and ``initialize`` they get, so "the
probe was skipped" is proven by what reached the server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import mcpsync
from mcpsync import types
from mcpsync.testing import FakeServer
from tests.servers.http_fault import Conn, FaultServer, Request, discover_result, init_result

UNSUPPORTED = {"code": -32022, "message": "Unsupported protocol version",
               "data": {"supported": ["2025-11-25"], "requested": "2026-07-28"}}


class Server:
    """A 2026-07-28 server over HTTP that can turn into a handshake-era one."""

    def __init__(self) -> None:
        self.modern = True
        self.lock = threading.Lock()
        self.http = FaultServer(self.handle)
        self.url = self.http.url + "/mcp"

    def handle(self, request: Request, conn: Conn) -> None:
        body = request.body if isinstance(request.body, dict) else {}
        rid = body.get("id")
        method = request.rpc_method
        modern_request = "io.modelcontextprotocol/protocolVersion" in (body.get("params") or {}).get("_meta", {})
        if request.method != "POST":
            conn.respond(405, b"", ctype="text/plain")
        elif "id" not in body:
            conn.respond(202, b"", ctype="text/plain")
        elif modern_request and not self.modern:
            conn.respond(200, {"jsonrpc": "2.0", "id": rid, "error": UNSUPPORTED})
        elif method == "server/discover":
            conn.respond(200, discover_result(request))
        elif method == "initialize" and not self.modern:
            conn.respond(200, init_result(request))
        elif method == "initialize":
            conn.respond(200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
        elif method == "tools/list":
            conn.respond(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": [
                {"name": "t", "inputSchema": {"type": "object"}}]}})
        else:
            conn.respond(200, {"jsonrpc": "2.0", "id": rid, "result": {}})

    def count(self, method: str) -> int:
        return len(self.http.rpc(method))

    def client(self, **options: Any) -> mcpsync.Client:
        return mcpsync.Client.http(self.url, transport="streamable-http", timeout=10, **options)


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.http.stop()


def test_a_saved_discover_result_skips_the_probe(server: Server) -> None:
    with server.client() as first:
        saved = json.dumps(types.to_wire(first.discover_result))
    assert server.count("server/discover") == 1

    prior = types.from_wire(types.DiscoverResult, json.loads(saved))
    with server.client(prior_discover=prior) as second:
        assert second.era == "modern"
        assert second.protocol_version == "2026-07-28"
        assert [t.name for t in second.list_tools()] == ["t"]
        assert second.discover_result == prior
        assert second.server_info.name == "modern-fault"
    assert server.count("server/discover") == 1  # none for the second client
    assert server.count("initialize") == 0


def test_the_wire_dict_is_accepted_too(server: Server) -> None:
    with server.client() as first:
        saved = types.to_wire(first.discover_result)
    with server.client(prior_discover=saved, mode="auto") as second:
        second.list_tools()
    assert server.count("server/discover") == 1


def test_a_stale_prior_reprobes_once_and_the_call_succeeds(server: Server) -> None:
    with server.client() as first:
        prior = first.discover_result
    server.modern = False  # the server now speaks only the handshake era
    with server.client(prior_discover=prior) as client:
        assert [t.name for t in client.list_tools()] == ["t"]
        assert client.era == "legacy"
        assert client.discover_result is None
        client.list_tools(cache=False)
    assert server.count("server/discover") == 2  # the first client's, and the one re-probe
    assert server.count("initialize") == 1
    # tools/list: the rejected one, its resend and the second call.
    assert server.count("tools/list") == 3


def test_the_reprobe_happens_once_per_connection(server: Server) -> None:
    prior = types.DiscoverResult(["2026-07-28"], types.ServerCapabilities(tools=types.ToolsCapability()))
    server.modern = False
    with server.client(prior_discover=prior, mode="2026-07-28") as client:
        # Pinned to 2026-07-28, the re-probe finds no era it may use.
        with pytest.raises(mcpsync.UnsupportedProtocolVersion):
            client.list_tools()
        with pytest.raises(mcpsync.ServerUnsupportedProtocolVersion):
            client.list_tools()
    assert server.count("server/discover") == 1


def test_mode_legacy_ignores_the_prior(server: Server) -> None:
    server.modern = False
    prior = types.DiscoverResult(["2026-07-28"], types.ServerCapabilities())
    with server.client(prior_discover=prior, mode="legacy") as client:
        assert client.era == "legacy"
    assert server.count("server/discover") == 0
    assert server.count("initialize") == 1


def test_a_prior_naming_no_version_we_speak_probes(server: Server) -> None:
    prior = types.DiscoverResult(["2099-01-01"], types.ServerCapabilities())
    with server.client(prior_discover=prior) as client:
        assert client.era == "modern"
    assert server.count("server/discover") == 1


def test_discover_result_is_none_on_a_handshake_era_server() -> None:
    with FakeServer("old", era="legacy").client() as client:
        assert client.era == "legacy"
        assert client.discover_result is None


def test_a_bad_prior_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        FakeServer("x").client(prior_discover=["2026-07-28"])


# -- the CLI's era cache -------------------------------------------------------------------------


def _cli(server: Server, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    from mcpsync.cli.main import main

    monkeypatch.delenv("MCPSYNC_ERA_CACHE", raising=False)  # set by conftest for the other tests
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("MCPSYNC_TOKEN_STORE", str(tmp_path / "tokens"))
    assert main(["--url", server.url, "--transport", "streamable-http", "tools"]) == 0
    return capsys.readouterr().out


def _entry(tmp_path: Any) -> tuple[Any, dict[str, Any]]:
    (path,) = (tmp_path / "cache" / "mcpsync" / "era").glob("*.json")
    return path, json.loads(path.read_text())


def test_the_cli_remembers_the_era_and_follows_a_change(
    server: Server, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "t" in _cli(server, tmp_path, monkeypatch, capsys)
    path, entry = _entry(tmp_path)
    assert entry["era"] == "modern" and entry["discover"]["supportedVersions"] == ["2026-07-28"]
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert path.parent.parent.stat().st_mode & 0o777 == 0o700

    _cli(server, tmp_path, monkeypatch, capsys)
    assert server.count("server/discover") == 1  # the second run skipped the probe

    server.modern = False  # stale: rejected, re-probed, rewritten
    assert "t" in _cli(server, tmp_path, monkeypatch, capsys)
    assert server.count("server/discover") == 2
    assert _entry(tmp_path)[1] == {"era": "legacy", "protocolVersion": "2025-11-25"}

    _cli(server, tmp_path, monkeypatch, capsys)  # remembered as handshake-era: no probe
    assert server.count("server/discover") == 2
    assert server.count("initialize") == 2

    server.modern = True  # the handshake is refused now: probe, and remember the new era
    assert "t" in _cli(server, tmp_path, monkeypatch, capsys)
    assert server.count("server/discover") == 3
    assert _entry(tmp_path)[1]["era"] == "modern"


def test_a_corrupt_entry_is_ignored_and_replaced(
    server: Server, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _cli(server, tmp_path, monkeypatch, capsys)
    path, _ = _entry(tmp_path)
    path.write_text("{not json")
    assert "t" in _cli(server, tmp_path, monkeypatch, capsys)
    assert _entry(tmp_path)[1]["era"] == "modern"
    assert server.count("server/discover") == 2


def test_the_cache_key_leaves_secret_values_out() -> None:
    from mcpsync.client.era_cache import cache_key
    from mcpsync.config import ServerConfig

    a = ServerConfig(name="a", transport="auto", url="https://x/mcp", headers={"Authorization": "Bearer one"})
    b = ServerConfig(name="b", transport="auto", url="https://x/mcp", headers={"Authorization": "Bearer two"})
    c = ServerConfig(name="a", transport="auto", url="https://y/mcp", headers={"Authorization": "Bearer one"})
    assert cache_key(a) == cache_key(b) != cache_key(c)


@pytest.mark.parametrize(("era", "expected"), [("dual", "modern"), ("legacy", "legacy")])
def test_the_cli_remembers_stdio_servers_too(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], era: str, expected: str
) -> None:
    import shlex
    import sys

    from mcpsync.cli.main import main

    script = tmp_path / "server.py"
    script.write_text(
        "from mcpsync.testing import FakeServer\n"
        f"s = FakeServer('stdio-{era}', era={era!r})\n"
        "@s.tool()\n"
        "def ping_me() -> str:\n"
        "    return 'pong'\n"
        "s.run_stdio()\n"
    )
    monkeypatch.setenv("MCPSYNC_ERA_CACHE", str(tmp_path / "era"))
    argv = ["--stdio", shlex.join([sys.executable, str(script)]), "call", "ping_me"]
    for _ in range(2):  # the second run starts from the entry the first one wrote
        assert main(argv) == 0
        assert "pong" in capsys.readouterr().out
        (path,) = (tmp_path / "era").glob("*.json")
        assert json.loads(path.read_text())["era"] == expected


def test_threads_meeting_a_stale_prior_at_once_share_one_reprobe(server: Server) -> None:
    prior = types.DiscoverResult(["2026-07-28"], types.ServerCapabilities(tools=types.ToolsCapability()))
    server.modern = False
    results: list[Any] = []
    lock = threading.Lock()
    with server.client(prior_discover=prior) as client:
        start = threading.Barrier(8)

        def call() -> None:
            start.wait(10)
            try:
                outcome: Any = [t.name for t in client.list_tools(cache=False)]
            except Exception as exc:  # collected and checked below
                outcome = exc
            with lock:
                results.append(outcome)

        threads = [threading.Thread(target=call) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
        assert client.era == "legacy"
    assert results == [["t"]] * 8
    assert server.count("server/discover") == 1
    assert server.count("initialize") == 1
