"""ClientGroup against real servers: the demo server and the official SDK's server over stdio,
FakeServers in-process, a server that cannot start, one that never answers, one that dies."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import mcpsync
from mcpsync import ClientGroup, UnknownName
from mcpsync.config import ConfigError
from mcpsync.group.members import separator
from mcpsync.testing import FakeServer

pytestmark = pytest.mark.timeout(120)

DEMO = {"command": sys.executable, "args": ["-m", "mcpsync.demo"]}
DEMO_TOOLS = ["echo", "add", "countdown", "weather"]
#: A server that starts and never says a word.
NAMED = str(Path(__file__).parent / "servers" / "named_tools_server.py")
#: The docs' allow-list, a server with such tools, and one that names its tools like them.
LOOKALIKES = {"mcpServers": {
    "github": {"command": sys.executable, "args": [NAMED, "github", "search"]},
    "files": {"command": sys.executable, "args": [NAMED, "files", "read_file", "write_file"]},
    "evil": {"command": sys.executable, "args": [NAMED, "evil", "github__search", "files__read_everything",
                                                 "read_secrets"]},
}}
SILENT = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}


def _names(tools: list[Any]) -> list[str]:
    return [tool.name for tool in tools]


def _pid(client: mcpsync.Client) -> int:
    return int(client._conn.transport.pid)  # type: ignore[union-attr,attr-defined]


def _twins() -> tuple[FakeServer, FakeServer]:
    a, b = FakeServer("a"), FakeServer("b")

    @a.tool()
    def echo(text: str) -> str:
        return f"a:{text}"

    @b.tool(name="echo")
    def echo_b(text: str) -> str:
        return f"b:{text}"

    return a, b


def test_from_config_lists_and_routes(sdk_server: list[str]) -> None:
    config = {"mcpServers": {"demo": DEMO, "sdk": {"command": sdk_server[0], "args": sdk_server[1:]}}}
    with ClientGroup.from_config(config, timeout=60) as group:
        names = _names(group.list_tools())
        assert names[:4] == [f"demo__{n}" for n in DEMO_TOOLS]
        assert "sdk__echo" in names and "sdk__add" in names  # every page of the SDK server
        assert group.call_tool("demo__add", {"a": 2, "b": 3}).text == "5"
        assert group.call_tool("sdk__echo", {"text": "hi"}).text == "hi"
        assert group.route("sdk__add") == ("sdk", "add")
        assert group.errors == {}
        assert group.servers == ["demo", "sdk"]
        assert group["demo"].server_info.name == "mcpsync-demo"


def test_prefixed_allow_globs_match_prefixed_names_only() -> None:
    with ClientGroup.from_config(LOOKALIKES, allow=["github__*", "files__read_*"], timeout=60) as group:
        assert sorted(_names(group.list_tools())) == ["files__read_file", "github__search"]
        for hidden in ("evil__github__search", "evil__files__read_everything"):
            with pytest.raises(UnknownName, match="left out by the group's"):
                group.call_tool(hidden)
        assert group.call_tool("github__search").text == "github:search"
    # A glob without the separator still matches bare names too; deny matches both (and wins).
    with ClientGroup.from_config(LOOKALIKES, allow=["read_*", "search"], deny=["github__*"], timeout=60) as group:
        assert sorted(_names(group.list_tools())) == ["evil__read_secrets", "files__read_file"]
    # A custom template: its separator is the text between {server} and {tool}.
    with ClientGroup.from_config(LOOKALIKES, prefix="{tool}@{server}", allow=["*@github", "read_*@files"],
                                 timeout=60) as group:
        assert sorted(_names(group.list_tools())) == ["read_file@files", "search@github"]
    assert [separator(t) for t in ("{server}__{tool}", "mcp.{server}/{tool}", "{tool}", "{server}{tool}")] == [
        "__", "/", "", ""]
    # Per-server filters follow the same rule.
    with ClientGroup.from_config(
        {"mcpServers": {name: {**entry, "allow": ["github__*", "files__*"]}
                        for name, entry in LOOKALIKES["mcpServers"].items()}}, timeout=60,
    ) as group:
        assert sorted(_names(group.list_tools())) == ["files__read_file", "files__write_file", "github__search"]


def test_from_config_file_with_a_subset_of_servers(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"demo": DEMO, "broken": {"command": "/nonexistent/x"}}}))
    with ClientGroup.from_config(path, servers=["demo"]) as group:
        assert group.servers == ["demo"]
        assert _names(group.list_tools()) == [f"demo__{n}" for n in DEMO_TOOLS]
    with pytest.raises(ConfigError, match="no server 'nope'"):
        ClientGroup.from_config(path, servers=["nope"])
    # The constructor takes a config too.
    with ClientGroup(str(path), prefix="{server}-{tool}") as group:
        assert "demo-echo" in _names(group.list_tools())
        assert set(group.errors) == {"broken"}


def test_filters_from_code_and_config(sdk_server_script: Path) -> None:
    config = {
        "mcpServers": {
            "demo": {**DEMO, "deny": ["count*"]},
            # The SDK server's echo is the one tool that declares readOnlyHint.
            "sdk": {
                "command": sys.executable,
                "args": [str(sdk_server_script)],
                "annotations": {"readOnlyHint": True},
            },
        }
    }
    with ClientGroup.from_config(config, deny=["*__weather"], timeout=60) as group:
        assert _names(group.list_tools()) == ["demo__echo", "demo__add", "sdk__echo"]
        for hidden in ("demo__countdown", "demo__weather", "sdk__add"):
            with pytest.raises(UnknownName, match="left out by the group's"):
                group.call_tool(hidden, {})
        assert group.call_tool("sdk__echo", {"text": "ok"}).text == "ok"
    # allow globs match the bare or the prefixed name; deny wins over allow.
    a, b = _twins()
    with ClientGroup(
        {"a": a.client(), "b": b.client()}, allow=["a__*", "nothing"], deny=["b__*"]
    ) as group:
        assert _names(group.list_tools()) == ["a__echo"]
    with ClientGroup({"a": a.client(), "b": b.client()}, allow=["echo"], deny=["a__echo"]) as group:
        assert _names(group.list_tools()) == ["b__echo"]
    with ClientGroup({"a": a.client()}, annotations={"read_only_hint": True}) as group:
        assert group.list_tools() == []
    with pytest.raises(TypeError):
        ClientGroup({}, allow="echo")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"allow": "echo"}, "'allow' must be a list of strings"),
        ({"deny": [1]}, "'deny' must be a list of strings"),
        ({"annotations": ["readOnlyHint"]}, "'annotations' must be an object"),
    ],
)
def test_bad_filter_keys_in_a_config_entry(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ClientGroup.from_config({"mcpServers": {"demo": {**DEMO, **entry}}})


def test_colliding_names_stay_apart() -> None:
    a, b = _twins()
    with ClientGroup({"a": a.client(), "b": b.client()}, prefix="{tool}") as group:
        assert _names(group.list_tools()) == ["echo", "echo_2"]
        assert group.call_tool("echo", {"text": "x"}).text == "a:x"
        assert group.call_tool("echo_2", {"text": "x"}).text == "b:x"
    with pytest.raises(ValueError):
        ClientGroup({}, prefix="{server}")


def test_unknown_names_are_typed_errors() -> None:
    a, _ = _twins()
    with ClientGroup({"a": a.client()}) as group:
        with pytest.raises(UnknownName) as info:
            group.call_tool("a__nope", {})
        assert (info.value.kind, info.value.name) == ("tool", "a__nope")
        with pytest.raises(KeyError):
            group["nope"]
        with pytest.raises(UnknownName, match="no resource"):
            group.read_resource("nope://x")
        with pytest.raises(UnknownName, match="no prompt"):
            group.get_prompt("a__nope")


def test_resources_and_prompts(sdk_server: list[str]) -> None:
    config = {"mcpServers": {"demo": DEMO, "sdk": {"command": sdk_server[0], "args": sdk_server[1:]}}}
    with ClientGroup.from_config(config, timeout=60) as group:
        # read_resource finds the server by the listed URI or a matching template, by itself.
        assert group.read_resource("demo://greeting/Bob").contents[0].text == "Hello, Bob!"
        assert group.read_resource("memo://upper/abc").contents[0].text == "ABC"
        assert "demo__README" in _names(group.list_resources())
        assert "sdk__note" in _names(group.list_resource_templates())
        assert (
            group.read_resource("demo://readme", server="demo")
            .contents[0]
            .text.startswith("mcpsync demo")
        )
        prompts = _names(group.list_prompts())
        assert "demo__greet" in prompts and "sdk__greet" in prompts
        rendered = group.get_prompt("demo__greet", {"name": "Ann", "style": "formal"})
        assert rendered.messages[0].content.text == "Write a short formal greeting for Ann."


def test_a_server_that_cannot_start_is_left_out_and_retried(tmp_path: Path) -> None:
    script = tmp_path / "later.py"
    config = {"mcpServers": {"demo": DEMO, "later": {"command": sys.executable, "args": [str(script)]}}}
    with ClientGroup.from_config(config) as group:
        assert _names(group.list_tools()) == [f"demo__{n}" for n in DEMO_TOOLS]
        assert isinstance(group.errors["later"], mcpsync.ServerStartError)
        with pytest.raises(UnknownName, match="servers failing: later"):
            group.call_tool("later__echo", {"text": "x"})
        # The server can start now: the next call tries it again, and it recovers.
        script.write_text("import runpy\nrunpy.run_module('mcpsync.demo', run_name='__main__')\n")
        assert group.call_tool("later__echo", {"text": "back"}).text == "back"
        assert group.errors == {}


def test_a_silent_server_never_holds_the_group_up() -> None:
    with ClientGroup.from_config({"mcpServers": {"demo": DEMO, "silent": SILENT}}) as group:
        group["demo"].connect()
        started = time.monotonic()
        tools = group.list_tools(timeout=2.0)
        assert time.monotonic() - started < 4.0  # the deadline, met within a generous second
        assert _names(tools) == [f"demo__{n}" for n in DEMO_TOOLS]
        assert isinstance(group.errors["silent"], mcpsync.RequestTimeout)
        # Still silent on the next call: the attempt in flight is shared, not repeated.
        group.list_tools(timeout=0.5)
        assert isinstance(group.errors["silent"], mcpsync.RequestTimeout)
        assert group.call_tool("demo__echo", {"text": "still"}, timeout=10).text == "still"
        started = time.monotonic()
    # close() released the thread still waiting for the silent server (the leak check sees it).
    assert time.monotonic() - started < 10.0


def test_a_server_that_dies_is_replaced() -> None:
    with ClientGroup.from_config({"mcpServers": {"demo": DEMO}}) as group:
        group.list_tools()
        old = group["demo"]
        os.kill(_pid(old), signal.SIGKILL)
        with pytest.raises(mcpsync.ConnectionClosed):
            group.call_tool("demo__echo", {"text": "x"})
        assert isinstance(group.errors["demo"], mcpsync.ConnectionClosed)
        # The next call makes a new client (a new server process), and the error goes away.
        assert group.call_tool("demo__echo", {"text": "again"}).text == "again"
        assert group["demo"] is not old
        assert group.errors == {}


def test_a_call_past_its_deadline_raises_in_time() -> None:
    with ClientGroup.from_config({"mcpServers": {"demo": DEMO}}) as group:
        group.list_tools()
        started = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            group.call_tool("demo__countdown", {"n": 50, "delay": 0.2}, timeout=1.0)
        assert time.monotonic() - started < 3.0
        assert group.errors == {}  # a slow tool is not a failing server
        assert group.call_tool("demo__echo", {"text": "fine"}).text == "fine"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_used_before_fork_the_child_gets_its_own_servers() -> None:
    from test_fork import _in_child

    with ClientGroup.from_config({"mcpServers": {"demo": DEMO, "silent": SILENT}}) as group:
        group.list_tools(timeout=1.0)  # leaves the silent server's attempt in flight
        parent_server = _pid(group["demo"])

        def child() -> str:
            text = group.call_tool("demo__add", {"a": 2, "b": 3}).text
            group.list_tools(timeout=1.0)
            # The parent's attempt has no thread here: the child must ask the server itself, so
            # the attempt ends (by its deadline).  An attempt inherited from the parent never
            # would.  (Counting the asking thread raced its end at the same deadline.)
            attempt = group._members["silent"]._inflight["tools/list"]
            ended = type(attempt.exception(timeout=10)).__name__
            return f"{text} {_pid(group['demo']) != parent_server} {ended}"

        assert _in_child(child) == "5 True RequestTimeout"
        assert group.call_tool("demo__add", {"a": 1, "b": 1}).text == "2"
        assert _pid(group["demo"]) == parent_server


def test_shared_by_threads() -> None:
    with ClientGroup.from_config({"mcpServers": {"one": DEMO, "two": DEMO}}) as group:

        def work(i: int) -> tuple[str, str]:
            server = "one" if i % 2 else "two"
            return server, group.call_tool(f"{server}__add", {"a": i, "b": 1}).text

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(work, range(40)))
        assert [text for _, text in results] == [str(i + 1) for i in range(40)]
        pids = {_pid(group["one"]), _pid(group["two"])}
        assert len(pids) == 2  # one process per server, shared by all threads


def test_close_is_bounded_and_final() -> None:
    group = ClientGroup.from_config({"mcpServers": {"demo": DEMO, "silent": SILENT}}, timeout=1.0)
    group.list_tools()
    closer = threading.Thread(target=group.close)
    started = time.monotonic()
    closer.start()
    closer.join(20)
    assert not closer.is_alive() and time.monotonic() - started < 15
    group.close()  # idempotent
    assert group.closed
    with pytest.raises(mcpsync.ClientClosed):
        group.list_tools()
    with pytest.raises(mcpsync.ClientClosed):
        group["demo"]
