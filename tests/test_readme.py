"""README.rst's commands, run exactly as printed, from a directory that is not the checkout.

The set-up command (``python3 -m venv .venv && .venv/bin/pip install . && ...``)
is the one part not run as printed: ``.venv`` in the temporary directory is a
link to the virtualenv running these tests, in which mcpsync is installed.
Everything after the installation, and every later command, is run verbatim.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.rst").read_text(encoding="utf-8")
RUN_TIMEOUT = 120

pytestmark = pytest.mark.timeout(RUN_TIMEOUT * 2)


def literal_block(after: str) -> list[str]:
    """The lines of the literal block (``::``) in the paragraph that starts with *after*."""
    start = README.index(after)
    marker = README.index("::\n", start)
    lines: list[str] = []
    for line in README[marker + 3 :].splitlines():
        if line.strip() and not line.startswith("    "):
            break
        if line.strip():
            lines.append(line[4:])
    return lines


def code_block(language: str) -> str:
    match = re.search(rf"\.\. code-block:: {language}\n\n((?:    .*\n|\n)+)", README)
    assert match, f"no {language} code block in README.rst"
    return "\n".join(line[4:] for line in match.group(1).splitlines())


@pytest.fixture()
def user_dir(tmp_path: Path) -> Path:
    """A directory that is not the checkout, with ``.venv`` being this test run's virtualenv."""
    venv = Path(sys.prefix)
    assert (venv / "bin" / "mcpsync").exists(), "the tests must run in a virtualenv with mcpsync"
    (tmp_path / ".venv").symlink_to(venv, target_is_directory=True)
    return tmp_path


def user_env() -> dict[str, str]:
    """This environment without any mcpsync on PATH, as in a fresh shell."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "MCPSYNC_CONFIG", "MCPSYNC_SERVER")}
    env["PATH"] = os.pathsep.join(
        d for d in env.get("PATH", "").split(os.pathsep) if d and not Path(d, "mcpsync").exists()
    )
    env["NO_COLOR"] = "1"
    return env


def run_shell(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: PLW1510 - the exit status is asserted
        ["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, cwd=cwd,
        env=user_env(), timeout=RUN_TIMEOUT,
    )


def test_the_test_suite_command_is_what_ci_runs() -> None:
    [command] = literal_block("Run the whole test suite")
    # The first command after the system packages (apt-get) is the README's.
    ci_line = next(line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
                   if line.startswith("python3 "))
    assert command == ci_line


def test_try_it_runs_the_demo(user_dir: Path) -> None:
    [command] = literal_block("Try it")
    steps = command.split(" && ")
    assert steps[:2] == ["python3 -m venv .venv", ".venv/bin/pip install ."]
    proc = run_shell(" && ".join(steps[2:]), user_dir)  # the part after the installation
    assert proc.returncode == 0, proc.stderr
    assert "add(a=2, b=3) -> 5" in proc.stdout and "-> Liftoff!" in proc.stdout
    # It ends by telling what to try next, with commands that work from here.
    assert ".venv/bin/mcpsync --stdio '.venv/bin/mcpsync demo --serve' tools" in proc.stdout
    assert proc.stderr == ""


def test_the_command_line_examples_work_as_printed(user_dir: Path) -> None:
    lines = literal_block("Command line")
    assert lines[0] == ". .venv/bin/activate" and all(line.startswith("mcpsync ") for line in lines[1:])
    proc = run_shell("\n".join(lines), user_dir)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert "add(a: number, b: number)" in out  # tools
    assert "5" in out  # call add a=2 b=3
    weather = json.loads(proc.stdout[proc.stdout.index("{") : proc.stdout.index("\n}\n") + 2])
    assert weather["structuredContent"]["city"] == "Paris"  # -o json
    assert any(line.split()[:2] == ["demo", "stdio"] for line in out)  # servers
    assert out[-1] == "hello world"  # through the config file
    assert json.loads((user_dir / "mcp.json").read_text())["mcpServers"]["demo"]["command"]
    assert proc.stderr == ""


def test_the_python_example_runs(user_dir: Path) -> None:
    proc = subprocess.run(  # noqa: PLW1510 - the exit status is asserted
        [str(user_dir / ".venv" / "bin" / "python"), "-c", code_block("python")],
        capture_output=True, text=True, cwd=user_dir, env=user_env(), timeout=RUN_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["['echo', 'add', 'countdown', 'weather']", "3"]


def test_the_typing_extra_has_every_optional_integration() -> None:
    """``mypy --strict mcpsync`` must see the types of optional imports with only ``[typing]``."""
    import configparser

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    extras = {name: {line.split(">")[0].split("[")[0].strip().lower()
                     for line in value.strip().splitlines()}
              for name, value in config["options.extras_require"].items()}
    integrations = set(extras) - {"test", "test-core", "docs", "typing"}
    assert integrations >= {"websocket", "jwt"}
    for name in integrations:
        # gunicorn is the server the web pages run their apps under; mcpsync never imports it.
        assert extras[name] - {"gunicorn"} <= extras["typing"], name


@pytest.mark.parametrize(
    ("page", "stale"),
    [
        ("design.rst", "The 2026-07-28 era is planned"),
        ("design.rst", "No OAuth or config loader yet"),
        ("development.rst", "planned OAuth token store"),
        ("quickstart.rst", "--stdio 'python -m mcpsync.demo'"),  # the system python, not ours
        ("cli.rst", "--stdio 'python -m mcpsync.demo'"),
    ],
)
def test_docs_do_not_say_stale_things(page: str, stale: str) -> None:
    assert stale not in (ROOT / "docs" / page).read_text(encoding="utf-8")
