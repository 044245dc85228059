"""The framework-free core of mcpsync.contrib: settings validation, encrypted and per-user stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpsync import ClientClosed
from mcpsync.auth import MemoryTokenStore, TokenStoreError
from mcpsync.config import ConfigError, ConfigWarning
from mcpsync.contrib._cipher import RecordCipher, generate_key
from mcpsync.contrib._cli import argv_for
from mcpsync.contrib._server_set import ServerSet, ServerSetError, validate
from mcpsync.contrib._useroauth import EncryptedTokenStore, ScopedTokenStore, is_safe_next
from mcpsync.testing.token_store import TokenStoreContract
from tests.contrib_support import DEMO, TEST_KEY

pytestmark = pytest.mark.timeout(60)


def _ids(servers: object, defaults: object = None, **kw: object) -> list[str]:
    return [p.id for p in validate(servers, defaults, **kw)[1]]  # type: ignore[arg-type]


def test_a_typo_of_an_integration_key_gets_a_hint() -> None:
    [problem] = validate({"demo": {**DEMO, "optons": {"timeout": 5}, "oath": True}})[1][:1]
    assert (problem.id, problem.hint) == ("mcpsync.W001", "did you mean 'options'?")
    assert [p.hint for p in validate({"demo": {**DEMO, "oath": True}})[1]] == ["did you mean 'oauth'?"]


def test_the_entrys_settings_win_over_the_defaults() -> None:
    specs, problems = validate({"demo": {**DEMO, "timeout": 5, "mode": "legacy"},
                                "other": {**DEMO, "timeout": 5, "options": {"timeout": 7}}},
                               {"timeout": 20, "mode": "auto", "close_grace": 1})
    assert problems == []
    assert specs["demo"].options == {"timeout": 5.0, "mode": "legacy", "close_grace": 1}
    assert specs["other"].options["timeout"] == 7


def test_a_good_setting_has_no_problems(tmp_path: Path) -> None:
    specs, problems = validate({"demo": DEMO, "web": {"url": "http://127.0.0.1:1/mcp"}}, {"timeout": 5})
    assert problems == []
    assert specs["demo"].options == {"timeout": 5} and specs["web"].oauth is None
    # The same as a file, with or without the outer mcpServers.
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"demo": DEMO}}))
    assert list(validate(str(path))[0]) == ["demo"]


def test_each_kind_of_mistake_has_its_id_and_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    _, problems = validate({
        "typo": {**DEMO, "comand": "x"},
        "unset": {"url": "${NOT_SET_ANYWHERE}/mcp"},
        "missing": {"command": "no-such-program-h19"},
        "option": {**DEMO, "options": {"timeot": 3}},
        "stdio-oauth": {**DEMO, "oauth": True},
        "bad": ["not", "a", "mapping"],
    })
    by_id = {p.id: p for p in problems}
    assert set(by_id) == {"mcpsync.W001", "mcpsync.E002", "mcpsync.E003", "mcpsync.E004", "mcpsync.E001"}
    assert "'comand'" in by_id["mcpsync.W001"].message and by_id["mcpsync.W001"].hint == "did you mean 'command'?"
    assert "NOT_SET_ANYWHERE" in by_id["mcpsync.E002"].message and "'unset'" in by_id["mcpsync.E002"].message
    assert "'no-such-program-h19'" in by_id["mcpsync.E003"].message
    assert "timeot" in by_id["mcpsync.E004"].message
    messages = " ".join(p.message for p in problems if p.id == "mcpsync.E001")
    assert "'oauth' needs a remote server" in messages and "'bad'" in messages


def test_a_typo_is_reported_once_and_known_keys_are_not_reported(recwarn: pytest.WarningsRecorder) -> None:
    # One check per unknown key, no ConfigWarning besides it; an entry-level setting
    # (timeout) and keys other clients write (disabled) are known, as in a mcpServers file.
    import warnings

    warnings.simplefilter("always")
    _, problems = validate({"typo": {**DEMO, "comand": "x", "timeout": 5, "disabled": False}})
    assert [(p.id, p.message) for p in problems] == [
        ("mcpsync.W001", "MCP_SERVERS['typo']: unknown key 'comand' (ignored)")
    ]
    assert [w for w in recwarn if issubclass(w.category, ConfigWarning)] == []


def test_a_server_specs_repr_holds_no_secret() -> None:
    specs, problems = validate(
        {"web": {"url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer canary-h"},
                 "oauth": {"client_id": "cid", "client_secret": "canary-secret"},
                 "options": {"headers": {"X-Key": "canary-option"}}}},
        token_key=TEST_KEY,
    )
    assert problems == []
    assert "canary" not in repr(specs["web"]) and "web" in repr(specs["web"])


def test_oauth_servers_need_a_valid_token_key() -> None:
    servers = {"web": {"url": "http://127.0.0.1:1/mcp", "oauth": {"client_name": "x"}}}
    assert _ids(servers, token_key=None) == ["mcpsync.E005"]
    assert _ids(servers, token_key="not-a-fernet-key") == ["mcpsync.E005"]
    assert _ids(servers, token_key=TEST_KEY) == []


def test_startup_raises_every_error_at_once() -> None:
    with pytest.raises(ServerSetError) as info:
        ServerSet.from_settings({"a": {"command": "no-such-program-h19"}, "b": {"url": 3}})
    assert len(info.value.problems) == 2
    assert "no-such-program-h19" in str(info.value) and isinstance(info.value, ConfigError)


def test_server_set_names_and_refuses_unknown_servers() -> None:
    servers = ServerSet.from_settings({"demo": DEMO, "web": {"url": "http://127.0.0.1:1/mcp", "oauth": True}},
                                      token_key=TEST_KEY)
    try:
        assert list(servers.specs) == ["demo", "web"]
        with pytest.raises(ConfigError, match="no MCP server 'nope'.*demo, web"):
            servers.get_client("nope")
        with pytest.raises(ConfigError, match="on behalf of each user"):
            servers.get_client("web")
        with pytest.raises(ConfigError, match="several"):
            servers.default_name()
    finally:
        servers.close()


def test_group_is_the_apps_own_servers_with_each_entrys_filters() -> None:
    web = {"url": "http://127.0.0.1:1/mcp", "oauth": True}  # per-user: never in the group
    servers = ServerSet.from_settings(
        {"demo": {**DEMO, "deny": ["countdown", "weather"]}, "web": web}, {"timeout": 20}, token_key=TEST_KEY
    )
    try:
        group = servers.group()
        assert servers.group() is group  # one per process
        names = {tool.name for tool in group.list_tools()}
        assert names == {"demo__echo", "demo__add"}
        assert group.call_tool("demo__add", {"a": 2, "b": 3}).text == "5"
        with pytest.raises(KeyError):
            group.call_tool("demo__countdown", {})  # filtered out: cannot be called
    finally:
        servers.close()
    with pytest.raises(ClientClosed):
        servers.group()


def test_shared_client_talks_to_the_demo_and_close_is_final() -> None:
    servers = ServerSet.from_settings({"demo": DEMO}, {"timeout": 20})
    shared = servers.get_client("demo")
    assert shared.call_tool("add", {"a": 2, "b": 3}).text == "5"
    servers.close()
    servers.close()  # idempotent
    with pytest.raises(ClientClosed):
        shared.call_tool("add", {"a": 2, "b": 3})


def test_cipher_round_trip_rotation_and_wrong_key() -> None:
    old, new = generate_key(), generate_key()
    sealed = RecordCipher(old).encrypt({"tokens": {"access_token": "canary-at"}}, "alice\0https://mcp/")
    assert "canary-at" not in sealed
    assert RecordCipher([new, old]).decrypt(sealed, "alice\0https://mcp/") == {"tokens": {"access_token": "canary-at"}}
    with pytest.raises(TokenStoreError, match="sealed for another user or server") as info:
        RecordCipher(old).decrypt(sealed, "mallory\0https://mcp/")
    assert "canary" not in str(info.value)
    with pytest.raises(TokenStoreError, match="cannot be decrypted") as info:
        RecordCipher(new).decrypt(sealed, "alice\0https://mcp/")
    assert new not in str(info.value) and old not in str(info.value)
    with pytest.raises(ConfigError, match="not a valid key"):
        RecordCipher("short")
    assert "redacted" in repr(RecordCipher(new))


def test_is_safe_next() -> None:
    assert is_safe_next("/tools?x=1")
    for bad in (None, "", "https://evil.example/", "//evil.example/x", "/\\evil", "tools"):
        assert not is_safe_next(bad)


def test_cli_arguments() -> None:
    assert argv_for("x mcp", "tools", [], ["demo"]) == ["--server", "demo", "tools"]
    assert argv_for("x mcp", "call", ["add", "a=1"], ["demo"]) == ["--server", "demo", "call", "add", "a=1"]
    assert argv_for("x mcp", "call", ["b", "add"], ["a", "b"]) == ["--server", "b", "call", "add"]
    assert argv_for("x mcp", "servers", [], ["a", "b"]) == ["servers"]


@pytest.mark.parametrize(("command", "rest", "message"), [
    ("tools", [], "name a server: x mcp tools SERVER (servers: a, b)"),
    ("tools", ["-o", "json"], "name a server: x mcp tools SERVER (servers: a, b)"),
    ("tools", ["c"], "no server 'c': x mcp tools SERVER (servers: a, b)"),
    ("call", ["add", "n=1"], "no server 'add': x mcp call SERVER TOOL key=value ... (servers: a, b)"),
])
def test_cli_usage_errors_say_the_wrappers_syntax(command: str, rest: list[str], message: str) -> None:
    from mcpsync.contrib._cli import UsageError

    with pytest.raises(UsageError) as caught:
        argv_for("x mcp", command, rest, ["a", "b"])
    assert str(caught.value) == message


def test_scoped_stores_do_not_see_each_other() -> None:
    shared = MemoryTokenStore()
    alice, bob = ScopedTokenStore(shared, "alice"), ScopedTokenStore(shared, "bob")
    alice.save("https://mcp.example/mcp", {"tokens": {"access_token": "alice-token"}})
    assert bob.load("https://mcp.example/mcp") is None
    bob.delete("https://mcp.example/mcp")
    assert alice.load("https://mcp.example/mcp") is not None


class TestEncryptedScopedStore(TokenStoreContract):
    @pytest.fixture
    def store(self) -> EncryptedTokenStore:
        return EncryptedTokenStore(ScopedTokenStore(MemoryTokenStore(), "user-1"), RecordCipher(TEST_KEY))

    def test_inner_store_holds_no_plaintext(self) -> None:
        inner = MemoryTokenStore()
        store = EncryptedTokenStore(inner, RecordCipher(TEST_KEY))
        store.save("k", {"tokens": {"access_token": "canary-inner"}})
        assert "canary-inner" not in json.dumps(inner.load("k"))
