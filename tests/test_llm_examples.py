"""The LLM examples, run as users run them, against the scripted model and the real demo server.

The scripts run as subprocesses with the SDKs' own ``*_BASE_URL`` variables pointing at
``tests/servers/scripted_llm.py``; the Flask view runs under Flask's test client, with
concurrent requests sharing one ClientGroup.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scripted_llm import ScriptedLLM

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

pytestmark = pytest.mark.timeout(120)


def _run(script: str, llm: ScriptedLLM, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **{key: value for key, value in os.environ.items() if key != "MCP_CONFIG"},
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": llm.base_url + "/v1",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": llm.base_url,
        **env,
    }
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        timeout=90,
        env=environ,
        check=False,
    )


@pytest.mark.parametrize(
    "script, args",
    [("llm_openai.py", []), ("llm_openai.py", ["--api", "responses"]), ("llm_anthropic.py", [])],
)
def test_scripts(script: str, args: list[str]) -> None:
    turns = [[("add", {"a": 2, "b": 3})], [("echo", {"text": "done"})]]
    with ScriptedLLM(turns) as llm:
        proc = _run(script, llm, *args, "What is 2 + 3?", LLM_MODEL="scripted-1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Final answer: done\n"
    assert llm.rejections == []
    paths = [path for path, _ in llm.requests]
    assert len(paths) == 3  # two rounds of tool calls, then the answer
    assert all(body["model"] == "scripted-1" for _, body in llm.requests)


def test_script_with_an_mcp_config(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        '{"mcpServers": {"calc": {"command": "%s", "args": ["-m", "mcpsync.demo"], "allow": ["add"]},'
        ' "gone": {"command": "/nonexistent/server"}}}' % sys.executable
    )
    with ScriptedLLM([[("calc__add", {"a": 1, "b": 1})]]) as llm:
        proc = _run("llm_anthropic.py", llm, "1 + 1?", MCP_CONFIG=str(config))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Final answer: 2\n"
    assert "(server gone was not available:" in proc.stderr
    offered = [tool["name"] for tool in llm.requests[0][1]["tools"]]
    assert offered == ["calc__add"]


def _load_flask_app() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mcpsync_example_flask_llm", EXAMPLES / "flask_llm.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def flask_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    turns = [[("add", {"a": 20, "b": 22})]]
    with ScriptedLLM(turns) as llm:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url + "/v1")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", llm.base_url)
        monkeypatch.delenv("MCP_CONFIG", raising=False)
        module = _load_flask_app()
        try:
            yield module, llm
        finally:
            module.group.close()
            module.llm().close()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_flask_view(provider: str, flask_llm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    module, llm = flask_llm
    monkeypatch.setenv("LLM_PROVIDER", provider)
    client = module.app.test_client()

    def ask(i: int) -> Any:
        return client.post("/ask", json={"question": f"question {i}"})

    with ThreadPoolExecutor(4) as pool:
        responses = list(pool.map(ask, range(8)))
    assert [r.status_code for r in responses] == [200] * 8
    assert {r.get_json()["answer"] for r in responses} == {"Final answer: 42"}
    assert responses[0].get_json()["unavailable"] == []
    assert llm.rejections == []
    assert client.post("/ask", json={}).status_code == 400
    # A backend failure is a 502 with the error's type.
    module.group.close()
    failed = client.post("/ask", json={"question": "after close"})
    assert failed.status_code == 502 and failed.get_json()["error"] == "ClientClosed"
