"""``mcpServers`` configuration: parsing, variable expansion, and real clients from it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import mcpsync
from mcpsync.config import ConfigError, UnsetVariableError, expand, load_config

DEMO = {"command": sys.executable, "args": ["-m", "mcpsync.demo"]}


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("${A}", {"A": "1"}, "1"),
        ("x-${A}-${B}", {"A": "1", "B": "2"}, "x-1-2"),
        ("${A:-dflt}", {}, "dflt"),
        ("${A:-}", {}, ""),
        ("${A:-dflt}", {"A": ""}, ""),  # set but empty is set (as in Claude Code)
        ("${env:A}", {"A": "v"}, "v"),
        ("${env:A:-d}", {}, "d"),
        ("$$A and $A", {"A": "no"}, "$A and $A"),  # bare $VAR is left alone
        ("no vars", {}, "no vars"),
    ],
)
def test_expand(text: str, env: dict[str, str], expected: str) -> None:
    assert expand(text, "field", env) == expected


def test_user_home() -> None:
    assert expand("${userHome}/x", "cwd", {}) == str(Path.home()) + "/x"


def test_unset_variable_is_a_typed_error_naming_the_variable_and_field() -> None:
    with pytest.raises(UnsetVariableError) as info:
        load_config(
            {"mcpServers": {"r": {"url": "https://x", "headers": {"Authorization": "Bearer ${TOKEN_X}"}}}},
            environ={},
        )
    assert isinstance(info.value, mcpsync.McpError) and isinstance(info.value, ValueError)
    assert info.value.variable == "TOKEN_X"
    assert info.value.where == "server 'r'.headers.Authorization"
    assert "TOKEN_X" in str(info.value)


@pytest.mark.parametrize("expr", ["${input:token}", "${A B}", "${}", "${command:x}"])
def test_unknown_expressions_are_config_errors(expr: str) -> None:
    with pytest.raises(ConfigError, match="unsupported expression"):
        expand(expr, "args", {})


def test_entries_of_every_kind() -> None:
    doc = {
        "mcpServers": {
            "local": {**DEMO, "env": {"K": "${V}"}, "cwd": "/tmp"},
            "remote": {"url": "https://mcp.example/mcp", "headers": {"X": "${V}"}},
            "typed": {"type": "http", "url": "https://a/mcp"},
            "sse": {"transport": "sse", "url": "https://a/sse"},
            "streamable": {"type": "streamable-http", "url": "https://a/mcp"},
            "ws": {"url": "wss://a/mcp"},
            "windsurf": {"serverUrl": "https://a/mcp"},
        }
    }
    servers = load_config(doc, environ={"V": "val"})
    assert servers["local"].transport == "stdio" and servers["local"].env == {"K": "val"}
    assert servers["local"].cwd == "/tmp" and not servers["local"].is_remote
    assert servers["remote"].transport == "auto" and servers["remote"].headers == {"X": "val"}
    assert servers["typed"].transport == "auto"
    assert servers["sse"].transport == "sse"
    assert servers["streamable"].transport == "streamable-http"
    assert servers["ws"].transport == "websocket"
    assert servers["windsurf"].url == "https://a/mcp"
    assert servers["remote"].describe() == "https://mcp.example/mcp (auto)"  # no header values


def test_vscode_servers_key() -> None:
    assert list(load_config({"servers": {"d": DEMO}})) == ["d"]


def test_only_the_named_entry_is_expanded() -> None:
    doc = {"mcpServers": {"a": DEMO, "b": {"url": "${UNSET_ONE}"}}}
    assert list(load_config(doc, "a", environ={})) == ["a"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({}, "no 'mcpServers'"),
        ({"mcpServers": []}, "must be a JSON object"),
        ({"mcpServers": {"a": 1}}, "must be a JSON object"),
        ({"mcpServers": {"a": {}}}, "needs 'command'"),
        ({"mcpServers": {"a": {"command": ""}}}, "non-empty string"),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "list of strings"),
        ({"mcpServers": {"a": {"command": "x", "env": {"A": 1}}}}, "object of strings"),
        ({"mcpServers": {"a": {"command": "x", "type": "sse"}}}, "has 'command'"),
        ({"mcpServers": {"a": {"url": "http://x", "type": "grpc"}}}, "unknown type"),
    ],
)
def test_bad_documents(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(doc, environ={})


def test_unknown_server_lists_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"demo": DEMO, "other": DEMO}}))
    with pytest.raises(ConfigError, match=r"no server 'x' in .*mcp.json \(servers: demo, other\)"):
        mcpsync.Client.from_config(path, "x")


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(bad)


@pytest.mark.timeout(60)
def test_from_config_file_runs_a_real_stdio_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPSYNC_TEST_GREETING", "from-env")
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {
                        "command": sys.executable,
                        "args": ["-c", ("import os,sys; from mcpsync.demo import build_server;"
                                 " s = build_server(); s.instructions = os.environ['GREETING'];"
                                 " s.run_stdio()")],
                        "env": {"GREETING": "${MCPSYNC_TEST_GREETING}"},
                        "cwd": "${MCPSYNC_TEST_CWD:-" + str(tmp_path) + "}",
                    }
                }
            }
        )
    )
    with mcpsync.Client.from_config(path, "demo", timeout=30) as client:
        assert client.call_tool("add", {"a": 2, "b": 2}).text == "4"
        assert client.instructions == "from-env"


@pytest.mark.timeout(60)
def test_from_config_dict_with_the_sdk_server(sdk_server: list[str]) -> None:
    doc = {"mcpServers": {"sdk": {"command": sdk_server[0], "args": sdk_server[1:]}}}
    with mcpsync.Client.from_config(doc, "sdk", timeout=30) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"


def test_docstring_examples() -> None:
    import doctest

    import mcpsync.cli.args
    import mcpsync.config

    for module in (mcpsync.config, mcpsync.cli.args):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_entries_set_timeouts_and_graces() -> None:
    doc = {"mcpServers": {
        "local": {**DEMO, "timeout": 90, "closeGrace": 0.5, "terminateGrace": 1, "discoverTimeout": 3},
        "remote": {"url": "https://x/mcp", "timeout": None},
        "plain": DEMO,
    }}
    servers = load_config(doc)
    assert servers["local"].options == {
        "timeout": 90.0, "close_grace": 0.5, "terminate_grace": 1.0, "discover_timeout": 3.0,
    }
    assert servers["remote"].options == {"timeout": None}  # null: wait forever
    assert servers["plain"].options == {}


#: A server that ignores EOF and SIGTERM and exits by itself 3 s after its stdin closes.
_SLOW_EXIT = ("import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "sys.stdin.read()\ntime.sleep(3)")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("settings", "signals"),
    [
        ({"closeGrace": 20}, []),  # the default 2 s would have sent SIGTERM
        ({"closeGrace": 0.1, "terminateGrace": 20}, ["TERM"]),  # the default would SIGKILL
    ],
)
def test_entry_graces_reach_the_transport(settings: dict[str, float], signals: list[str]) -> None:
    entry = load_config({"mcpServers": {"s": {
        "command": sys.executable, "args": ["-c", _SLOW_EXIT], **settings}}})["s"]
    client = mcpsync.Client.from_server_config(entry)
    transport = client._life._transport
    transport.start(lambda message: None, lambda exc: None)  # type: ignore[union-attr]
    try:
        transport.close()  # type: ignore[union-attr]
    finally:
        client.close()
    assert transport.signals_sent == signals  # type: ignore[union-attr]
    assert transport.returncode == 0  # type: ignore[union-attr]  # it exited by itself


def test_entry_timeout_reaches_the_client_and_options_win() -> None:
    entry = load_config({"mcpServers": {"s": {**DEMO, "timeout": 7}}})["s"]
    assert mcpsync.Client.from_server_config(entry)._options.timeout == 7.0
    assert mcpsync.Client.from_server_config(entry, timeout=3)._options.timeout == 3


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({**DEMO, "timeout": "30"}, "'timeout' must be a number of seconds"),
        ({**DEMO, "closeGrace": -1}, "'closeGrace' must be a number of seconds"),
        ({**DEMO, "timeout": True}, "'timeout' must be a number of seconds"),
        ({"url": "https://x/mcp", "closeGrace": 1}, "'closeGrace' applies to stdio servers"),
    ],
)
def test_bad_settings_are_config_errors(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config({"mcpServers": {"s": entry}})


def test_unknown_keys_warn_with_a_suggestion_and_foreign_keys_do_not() -> None:
    import warnings

    from mcpsync.config import ConfigWarning

    doc = {"mcpServers": {"s": {**DEMO, "close_grace": 1, "timout": 5, "disabled": False,
                                "autoApprove": [], "envFile": ".env"}}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        entry = load_config(doc)["s"]
    texts = sorted(str(w.message) for w in caught if w.category is ConfigWarning)
    assert texts == [
        "server 's': unknown key 'close_grace' ignored (did you mean 'closeGrace'?)",
        "server 's': unknown key 'timout' ignored (did you mean 'timeout'?)",
    ]
    assert entry.options == {}


def test_servers_target_is_the_url_or_command_line() -> None:
    servers = load_config({"mcpServers": {"r": {"url": "https://x/mcp"}, "l": DEMO}})
    assert servers["r"].target == "https://x/mcp"
    assert servers["l"].target == f"{sys.executable} -m mcpsync.demo"


def test_repr_shows_which_env_and_headers_are_set_never_their_values() -> None:
    servers = load_config({"mcpServers": {
        "local": {"command": "x", "env": {"API_KEY": "canary-env-value"}},
        "remote": {"url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer canary-header"}},
    }})
    text = repr(servers)
    assert "API_KEY" in text and "Authorization" in text
    assert "canary" not in text


def test_mode_is_a_client_option_of_the_entry() -> None:
    doc = {"mcpServers": {"p": {**DEMO, "mode": "legacy"}, "v": {"url": "https://x/mcp", "mode": "2025-06-18"}}}
    servers = load_config(doc)
    assert servers["p"].options == {"mode": "legacy"} and servers["v"].options == {"mode": "2025-06-18"}
    with mcpsync.Client.from_config(doc, "p") as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
        assert client.era == "legacy"
    with pytest.raises(ConfigError, match="'mode' must be one of auto, legacy, modern, 2026-07-28"):
        load_config({"mcpServers": {"p": {**DEMO, "mode": "old"}}})


def test_a_path_with_a_tilde_is_in_the_home_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"demo": DEMO}}))
    assert load_config("~/.cursor/mcp.json")["demo"].command == sys.executable
