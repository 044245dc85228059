"""The ``mcpsync`` command, run as a subprocess against real servers.

The demo server (``python -m mcpsync.demo``) and the official-SDK test server
(``tests/servers/sdk_server.py``) over stdio; exit codes are asserted for
every failure class scripts rely on.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mcpsync.cli.main import EXIT_CODES, build_parser
from tests.contrib_support import free_port

ROOT = Path(__file__).resolve().parent.parent
DEMO = f"{shlex.quote(sys.executable)} -m mcpsync.demo"
#: A hand-written server with some features only (see its docstring).
SPARSE = f"{shlex.quote(sys.executable)} {shlex.quote(str(ROOT / 'tests/servers/sparse_server.py'))}"
RUN_TIMEOUT = 60

pytestmark = pytest.mark.timeout(RUN_TIMEOUT + 30)


def mcpsync(*argv: str, stdin: str | None = None, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env.pop("MCPSYNC_CONFIG", None)
    return subprocess.run(  # noqa: PLW1510 - the exit status is asserted
        [sys.executable, "-m", "mcpsync", *argv], capture_output=True, text=True, input=stdin,
        timeout=RUN_TIMEOUT, env=full_env, cwd=ROOT,
    )


@pytest.fixture(scope="module")
def sdk_cmd() -> str:
    return " ".join(shlex.quote(p) for p in [sys.executable, str(ROOT / "tests/servers/sdk_server.py")])


def test_tools_human_and_json() -> None:
    proc = mcpsync("--stdio", DEMO, "tools")
    assert proc.returncode == 0, proc.stderr
    assert "add(a: number, b: number)\n    Add two numbers." in proc.stdout
    assert "countdown(n?: integer, delay?: number)" in proc.stdout
    proc = mcpsync("tools", "--stdio", DEMO, "--json")  # options after the command work too
    tools = json.loads(proc.stdout)
    assert {t["name"] for t in tools} == {"echo", "add", "countdown", "weather"}
    assert tools[0]["inputSchema"]["type"] == "object"


def test_call_with_typed_key_values_and_progress_on_stderr() -> None:
    proc = mcpsync("--stdio", DEMO, "call", "add", "a=2", "b=3.5")
    assert (proc.returncode, proc.stdout) == (0, "5.5\n"), proc.stderr
    proc = mcpsync("--stdio", DEMO, "call", "echo", "text=007")  # a string stays a string
    assert proc.stdout == "007\n"
    proc = mcpsync("--stdio", DEMO, "call", "countdown", "n=3", "delay=0.01")
    assert proc.returncode == 0 and proc.stdout == "Liftoff!\n"
    assert proc.stderr.count("progress [") == 3  # stderr is not a TTY: one line per update
    assert "3/3 T-minus 0" in proc.stderr


def test_call_with_json_arguments_and_json_output() -> None:
    proc = mcpsync("--stdio", DEMO, "-o", "json", "call", "weather", "--args", '{"city": "Oslo"}')
    result = json.loads(proc.stdout)
    assert result["structuredContent"]["city"] == "Oslo"
    proc = mcpsync("--stdio", DEMO, "--json", "call", "add", "--args", "-", stdin='{"a": 1, "b": 2}')
    assert json.loads(proc.stdout)["content"][0]["text"] == "3"
    # --json means "print JSON" everywhere, call included, before or after the arguments
    proc = mcpsync("--stdio", DEMO, "call", "add", "a=1", "b=2", "--json")
    assert json.loads(proc.stdout)["content"][0]["text"] == "3", proc.stderr


def test_resources_read_prompts_prompt() -> None:
    proc = mcpsync("--stdio", DEMO, "resources")
    assert proc.stdout.splitlines() == [
        "URI                     NAME      MIME TYPE",
        "demo://readme           README    text/plain",
        "demo://greeting/{name}  greeting  (template)",
    ]
    proc = mcpsync("--stdio", DEMO, "read", "demo://greeting/Ada")
    assert proc.stdout == "Hello, Ada!\n"
    proc = mcpsync("--stdio", DEMO, "prompts")
    assert "greet(name, style?)" in proc.stdout
    proc = mcpsync("--stdio", DEMO, "prompt", "greet", "name=Ada", "style=pirate")
    assert proc.stdout == "[user]\nWrite a short pirate greeting for Ada.\n"
    proc = mcpsync("--stdio", DEMO, "-o", "json", "read", "demo://readme")
    assert json.loads(proc.stdout)["contents"][0]["uri"] == "demo://readme"


def test_sdk_server_every_subcommand(sdk_cmd: str) -> None:
    """The official SDK's server (pages of 3) through every listing and call."""
    import sdk_catalog

    proc = mcpsync("--stdio", sdk_cmd, "--json", "tools")
    assert [t["name"] for t in json.loads(proc.stdout)] == [t["name"] for t in sdk_catalog.TOOLS]
    assert mcpsync("--stdio", sdk_cmd, "call", "echo", "text=hi").stdout == "hi\n"
    proc = mcpsync("--stdio", sdk_cmd, "-o", "json", "call", "add", "a=2", "b=3")
    assert json.loads(proc.stdout)["structuredContent"] == {"sum": 5}
    proc = mcpsync("--stdio", sdk_cmd, "call", "slow", "steps=3", "delay=0.01")
    assert proc.returncode == 0 and proc.stderr.count("progress [") == 3, proc.stderr
    proc = mcpsync("--stdio", sdk_cmd, "call", "media")
    assert "[image: image/png," in proc.stdout and "[resource link:" in proc.stdout
    proc = mcpsync("--stdio", sdk_cmd, "--json", "resources")
    listed = json.loads(proc.stdout)
    assert len(listed["resources"]) == len(sdk_catalog.RESOURCES)  # all pages
    assert len(listed["resourceTemplates"]) == len(sdk_catalog.TEMPLATES)
    assert mcpsync("--stdio", sdk_cmd, "read", "memo://note/1").stdout == "note 1\n"
    proc = mcpsync("--stdio", sdk_cmd, "read", "memo://blob/1")
    assert proc.stdout.startswith("[blob memo://blob/1: application/octet-stream")
    proc = mcpsync("--stdio", sdk_cmd, "prompts")
    assert proc.returncode == 0 and "greet(" in proc.stdout
    proc = mcpsync("--stdio", sdk_cmd, "--json", "prompt", "greet", "name=Ada")
    assert proc.returncode == 0 and "Ada" in json.dumps(json.loads(proc.stdout)["messages"])


def test_tool_error_exits_1_with_the_content_printed(sdk_cmd: str) -> None:
    proc = mcpsync("--stdio", sdk_cmd, "call", "fail", "message=boom")
    assert proc.returncode == 1
    assert "boom" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "error: tool 'fail' reported an error"


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["tools"], 2, "no server given"),
        (["--stdio", DEMO, "--url", "http://127.0.0.1:9/", "tools"], 2, "only one of"),
        (["--config", "/nonexistent.json", "--server", "x", "tools"], 2, "cannot read"),
        (["--stdio", DEMO, "call", "add", "oops"], 2, "expected key=value"),
        (["--stdio", DEMO, "call", "add", "--args", "[1]"], 2, "must be a JSON object"),
        (["--stdio", DEMO, "call", "nope"], 4, "no tool 'nope' on the server; its tools: add, "),
        (["--stdio", DEMO, "call", "nope", "--no-check"], 4, "InvalidParams"),
        (["--stdio", "/nonexistent/server-binary", "tools"], 3, "ServerStartError"),
        # The server exits at once: it "closed its stdout", or (when that is seen first)
        # "cannot write to" it; either way the exit status is named.
        (["--stdio", f"{shlex.quote(sys.executable)} -c pass", "tools"], 3, "(exit code 0)"),
        (["--url", "http://127.0.0.1:9/mcp", "tools"], 3,
         "http://127.0.0.1:9/mcp failed: connection refused"),
        (["--stdio", DEMO, "--timeout", "0.3", "call", "countdown", "n=1", "delay=5"], 5,
         "RequestTimeout"),
    ],
)
def test_failures_are_one_line_with_a_documented_exit_code(argv: list[str], code: int, message: str) -> None:
    proc = mcpsync(*argv)
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcpsync: error: "), proc.stderr
    assert message in lines[0]
    assert "Traceback" not in proc.stderr
    assert code in EXIT_CODES


def test_debug_shows_the_traceback() -> None:
    proc = mcpsync("--debug", "--stdio", DEMO, "call", "nope")
    assert proc.returncode == 4
    assert "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.rstrip().endswith("mcpsync: error: UnknownName: no tool 'nope' on the server;"
                                         " its tools: add, countdown, echo, weather")


METHOD_LOG = ROOT / "tests" / "servers" / "method_log_server.py"


@pytest.mark.parametrize("where", ["option", "config entry"])
def test_mode_legacy_sends_initialize_first_and_no_discover(tmp_path: Path, where: str) -> None:
    """``--mode legacy`` (or ``"mode": "legacy"``) pins the handshake era: no server/discover probe,
    which proxies in front of handshake-era servers cannot pass on."""
    log = tmp_path / "methods.log"
    command = [sys.executable, str(METHOD_LOG), str(log)]
    env = {"MCPSYNC_ERA_CACHE": str(tmp_path / "era")}  # nothing remembered from other runs
    proc = mcpsync("--stdio", shlex.join(command), "tools", env=env)  # the default: probed first
    assert proc.returncode == 0, proc.stderr
    assert log.read_text().split()[0] == "server/discover"
    log.unlink()
    if where == "option":
        proc = mcpsync("--stdio", shlex.join(command), "--mode", "legacy", "call", "add", "a=1", "b=2", env=env)
    else:
        config = tmp_path / "mcp.json"
        entry = {"command": command[0], "args": command[1:], "mode": "legacy"}
        config.write_text(json.dumps({"mcpServers": {"proxied": entry}}))
        proc = mcpsync("--config", str(config), "call", "add", "a=1", "b=2", env=env)
    assert (proc.returncode, proc.stdout) == (0, "3\n"), proc.stderr
    methods = log.read_text().split()
    assert methods[:2] == ["initialize", "notifications/initialized"] and "server/discover" not in methods
    assert "tools/call" in methods


def test_mode_is_checked() -> None:
    proc = mcpsync("--stdio", DEMO, "--mode", "old", "tools")
    assert proc.returncode == 2 and "argument --mode: invalid choice: 'old'" in proc.stderr


def test_config_servers_and_server_selection(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "demo": {"command": sys.executable, "args": ["-m", "mcpsync.demo"]},
        "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${TOK}"}},
    }}))
    proc = mcpsync("--config", str(path), "servers")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["NAME", "TRANSPORT", "COMMAND", "OR", "URL"]
    assert lines[1].split()[:2] == ["demo", "stdio"] and lines[1].endswith("-m mcpsync.demo")
    assert lines[2].split() == ["remote", "http", "http://127.0.0.1:9/mcp"]  # as the file says it
    assert "Bearer" not in proc.stdout  # header values (secrets) are never listed
    proc = mcpsync("--config", str(path), "--server", "demo", "call", "add", "a=1", "b=1")
    assert proc.stdout == "2\n"
    proc = subprocess.run(  # noqa: PLW1510 - the exit status is asserted
        [sys.executable, "-m", "mcpsync", "call", "add", "a=1", "b=2"], capture_output=True,
        text=True, timeout=RUN_TIMEOUT, cwd=ROOT,
        env={**os.environ, "MCPSYNC_CONFIG": str(path), "MCPSYNC_SERVER": "demo"},
    )
    assert proc.stdout == "3\n", proc.stderr
    proc = mcpsync("--config", str(path), "tools")
    assert proc.returncode == 2 and "--server NAME is needed" in proc.stderr
    proc = mcpsync("--config", str(path), "--server", "remote", "tools", env={"TOK": ""})
    # TOK is set (empty): the entry resolves; the unreachable host is a connection error.
    assert proc.returncode == 3, proc.stderr
    env = {k: v for k, v in os.environ.items() if k != "TOK"}
    proc = subprocess.run(  # noqa: PLW1510 - the exit status is asserted
        [sys.executable, "-m", "mcpsync", "--config", str(path), "--server", "remote", "tools"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=ROOT, env=env,
    )
    assert proc.returncode == 2
    assert "environment variable TOK is not set" in proc.stderr


def test_help_of_every_subcommand_explains_itself() -> None:
    proc = mcpsync("--help")
    assert proc.returncode == 0
    for name in ("tools", "call", "resources", "read", "prompts", "prompt", "login", "logout",
                 "servers", "demo", "exit codes:", "--stdio CMD", "--config FILE"):
        assert name in proc.stdout
    parser = build_parser()
    subactions = [a for a in parser._actions if isinstance(a, type(parser._subparsers._group_actions[0]))]  # type: ignore[union-attr]
    for name, sub in subactions[0].choices.items():
        text = sub.format_help()
        assert sub.description, name
        assert "usage: mcpsync " + name in text
    call_help = mcpsync("call", "--help").stdout
    assert "key=value" in call_help and "--args JSON" in call_help and "reports an error" in call_help
    # A command's help shows its own examples, not the whole list and the exit-code table.
    assert "call add a=2 b=3" in call_help and "login" not in call_help
    assert "exit codes: see `mcpsync --help`" in call_help and "interrupted" not in call_help


def test_demo_still_works() -> None:
    proc = mcpsync("demo")
    assert proc.returncode == 0 and "Liftoff!" in proc.stdout


def test_tools_shows_type_lists_anyof_arrays_and_enums() -> None:
    proc = mcpsync("--stdio", SPARSE, "tools")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        'search(query: string, exact?: boolean|string, limit?: integer|null, tags?: string[],'
        ' unit?: "celsius"|"fahrenheit")',
        "    Search things.",
        "open(path?: string)",
    ]


@pytest.mark.parametrize(("server", "command"), [(SPARSE, "prompts"), (f"{SPARSE} --no-tools", "tools")])
def test_a_server_without_the_capability_lists_nothing_and_succeeds(server: str, command: str) -> None:
    proc = mcpsync("--stdio", server, command)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    proc = mcpsync("--stdio", server, command, "-o", "json")
    assert (proc.returncode, json.loads(proc.stdout)) == (0, [])


def test_resources_without_templates_list_what_exists() -> None:
    """The server has resources/list but answers MethodNotFound to resources/templates/list."""
    proc = mcpsync("--stdio", SPARSE, "resources")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["URI            NAME  MIME TYPE", "file:///a.txt  a"]
    proc = mcpsync("--stdio", SPARSE, "resources", "--json")
    assert json.loads(proc.stdout) == {
        "resources": [{"uri": "file:///a.txt", "name": "a"}], "resourceTemplates": []}


def test_call_types_values_by_the_schema() -> None:
    proc = mcpsync("--stdio", SPARSE, "call", "search", "query=1", "exact=true", "limit=null",
                   'tags=["a"]', "unit=celsius")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "query": "1", "exact": True, "limit": None, "tags": ["a"], "unit": "celsius"}
    proc = mcpsync("--stdio", SPARSE, "call", "search", "query=x", "exact=maybe")
    assert json.loads(proc.stdout) == {"query": "x", "exact": "maybe"}  # boolean|string


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["exact=true"], "missing required argument 'query'"),
        (["query=x", "limit=many"], "argument 'limit' must be of type integer|null, got \"many\""),
        (["query=x", "unit=kelvin"],
         "argument 'unit' must be of type \"celsius\"|\"fahrenheit\", got \"kelvin\""),
        (["query=x", "extra=1"], "unknown argument 'extra'"),  # additionalProperties: false
        (["--args", '{"query": 5}'], "argument 'query' must be of type string, got 5"),
    ],
)
def test_call_checks_arguments_against_the_schema_before_sending(argv: list[str], problem: str) -> None:
    proc = mcpsync("--stdio", SPARSE, "call", "search", *argv)
    assert proc.returncode == 2, proc.stderr
    first, usage = proc.stderr.splitlines()
    assert first.startswith("mcpsync: error: UsageError: tool 'search': ") and problem in first
    assert usage.strip().startswith("usage: search(query: string, exact?: boolean|string")


def test_no_check_sends_as_given_and_args_file(tmp_path: Path) -> None:
    proc = mcpsync("--stdio", SPARSE, "call", "search", "extra=1", "--no-check")
    assert (proc.returncode, json.loads(proc.stdout)) == (0, {"extra": 1}), proc.stderr
    args = tmp_path / "args.json"
    args.write_text('{"query": "from a file"}')
    proc = mcpsync("--stdio", SPARSE, "call", "search", "--args-file", str(args))
    assert json.loads(proc.stdout) == {"query": "from a file"}, proc.stderr
    proc = mcpsync("--stdio", SPARSE, "call", "search", "a=1", "--args", "{}")
    assert proc.returncode == 2 and "not both" in proc.stderr
    proc = mcpsync("--stdio", SPARSE, "call", "search", '{"query": "x"}')
    assert proc.returncode == 2 and "for a JSON object use --args" in proc.stderr


def test_a_dead_server_shows_its_first_and_last_stderr_lines_as_lines() -> None:
    code = ("import sys\nprint('Error: --kubeconfig is required', file=sys.stderr)\n"
            "for i in range(40): print(f'usage line {i}', file=sys.stderr)\nsys.exit(1)")
    proc = mcpsync("--stdio", f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}", "tools")
    assert proc.returncode == 3
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("mcpsync: error: ServerStartError: could not connect: ")
    assert lines[0].endswith("(exit code 1); server stderr:")
    assert lines[1] == "    Error: --kubeconfig is required"
    assert "    [... 11 lines skipped ...]" in lines and lines[-1] == "    usage line 39"


def test_server_stderr_cannot_drive_the_terminal() -> None:
    code = "import sys\nprint('\\x1b[2Jbad\\x07', file=sys.stderr)\nsys.exit(1)"
    proc = mcpsync("--stdio", f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}", "tools")
    assert "\x1b" not in proc.stderr and "    \\x1b[2Jbad\\x07" in proc.stderr


def test_close_grace_from_the_command_line_wins_over_the_entry(tmp_path: Path) -> None:
    """A server that ignores EOF and SIGTERM; the entry says 20 s of grace, the option 0.1 s."""
    import time

    stubborn = ("import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "from mcpsync.demo import main\nmain()\ntime.sleep(120)")
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"s": {
        "command": sys.executable, "args": ["-c", stubborn], "closeGrace": 20, "terminateGrace": 20,
    }}}))
    started = time.monotonic()
    proc = mcpsync("--config", str(path), "call", "add", "a=1", "b=1",
                   "--close-grace", "0.1", "--terminate-grace", "0.1")
    assert (proc.returncode, proc.stdout) == (0, "2\n"), proc.stderr
    assert time.monotonic() - started < 15  # the entry's graces alone would take 40 s


def test_timing_options_reach_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpsync.cli.connect import UsageError, open_client
    from mcpsync.client.client import Client

    seen: dict[str, object] = {}
    monkeypatch.setattr(Client, "from_server_config",
                        lambda entry, **options: seen.update(options) or "client")
    args = build_parser().parse_args(["--stdio", "srv", "--discover-timeout", "3", "tools",
                                      "--timeout", "9", "--close-grace", "0.5"])
    assert open_client(args) == "client"
    assert {k: seen[k] for k in ("timeout", "discover_timeout", "close_grace")} == {
        "timeout": 9.0, "discover_timeout": 3.0, "close_grace": 0.5}
    assert "terminate_grace" not in seen
    args = build_parser().parse_args(["--url", "http://127.0.0.1:9/", "--close-grace", "1", "tools"])
    with pytest.raises(UsageError, match="--close-grace applies to stdio servers only"):
        open_client(args)
    proc = mcpsync("--stdio", DEMO, "--timeout", "soon", "tools")
    assert proc.returncode == 2 and "expected a number of seconds, got 'soon'" in proc.stderr


def test_unknown_config_keys_warn_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"demo": {
        "command": sys.executable, "args": ["-m", "mcpsync.demo"], "timout": 5, "disabled": False}}}))
    proc = mcpsync("--config", str(path), "call", "add", "a=1", "b=2")
    assert (proc.returncode, proc.stdout) == (0, "3\n"), proc.stderr
    assert proc.stderr.splitlines() == [
        "mcpsync: warning: server 'demo': unknown key 'timout' ignored (did you mean 'timeout'?)"]


def test_refused_connection_says_so_with_the_whole_url() -> None:
    port = free_port()  # a port that was just free: nothing listens there
    proc = mcpsync("--url", f"http://127.0.0.1:{port}/mcp/with/a/long/path", "tools")
    assert proc.returncode == 3
    assert proc.stderr.splitlines() == [
        f"mcpsync: error: ServerStartError: could not connect: POST server/discover to "
        f"http://127.0.0.1:{port}/mcp/with/a/long/path failed: connection refused (is the "
        "server running, and is that the right port?)"]


@pytest.mark.parametrize(
    ("argv", "code", "first"),
    [
        (["greet"], 2, "UsageError: prompt 'greet': missing required argument 'name'"),
        (["greet", "name=Ada", "tone=x"], 2, "UsageError: prompt 'greet': unknown argument 'tone'"),
        (["gree", "name=Ada"], 4, "UnknownName: no prompt 'gree' on the server; its prompts: greet"),
    ],
)
def test_prompt_checks_its_arguments_before_sending(argv: list[str], code: int, first: str) -> None:
    proc = mcpsync("--stdio", DEMO, "prompt", *argv)
    assert proc.returncode == code
    assert proc.stderr.splitlines()[0] == f"mcpsync: error: {first}"


def test_every_exit_code_is_documented() -> None:
    page = (ROOT / "docs" / "cli.rst").read_text(encoding="utf-8")
    table = page[page.index("Exit codes\n----------"):]
    documented = {int(line.split()[0]) for line in table.splitlines()
                  if line[:1].isdigit() and line.split()[0].isdigit()}
    assert documented == set(EXIT_CODES)


def test_the_examples_in_command_help_work(tmp_path: Path) -> None:
    """Every example of ``mcpsync COMMAND --help`` that needs no outside server runs as printed."""
    from mcpsync.cli.commands import COMMANDS

    bin_dir = str(Path(sys.executable).parent)
    assert Path(bin_dir, "mcpsync").exists()
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    env.pop("MCPSYNC_CONFIG", None)
    examples = [e for command in COMMANDS.values() for e in command.examples
                if "example.com" not in e and "github" not in e and "~/" not in e]
    assert len(examples) >= 10
    for example in dict.fromkeys(examples):
        proc = subprocess.run(  # noqa: PLW1510 - the exit status is asserted
            ["bash", "-o", "pipefail", "-c", example], capture_output=True, text=True,
            timeout=RUN_TIMEOUT, env=env, cwd=tmp_path,
        )
        assert proc.returncode == 0, (example, proc.stderr)
        assert proc.stdout.strip() or (tmp_path / "mcp.json").exists(), example


ESCAPES = f"{shlex.quote(sys.executable)} {shlex.quote(str(ROOT / 'tests/servers/escape_server.py'))}"
#: What must never reach the terminal raw: ESC, BEL, CR, 8-bit CSI, a bidi override.
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\x9b", "\u202e")
SHOWN = "\\x1b[2J\\x1b]0;pwned\\x07\\x1b]52;c;cm0gLXJmIH4=\\x07\\x9b31m\\x0dfake\\u202eevil"


def _on_a_terminal(*argv: str) -> str:
    """The CLI's stdout and stderr as a terminal (a pseudo-terminal) receives them."""
    import pty

    leader, follower = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "mcpsync", *argv], stdin=subprocess.DEVNULL,
                          stdout=follower, stderr=follower, cwd=ROOT) as proc:
        os.close(follower)
        received = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            received += chunk
        proc.wait(RUN_TIMEOUT)
    os.close(leader)
    # Less the terminal's own line ends and the CLI's own styles and progress-bar redraws.
    return re.sub(r"\x1b\[\d*[mK]|\r(?=\[)", "", received.decode().replace("\r\n", "\n"))


@pytest.mark.parametrize("argv", [["call", "taunt"], ["call", "shaped"], ["call", "fail"],
                                  ["read", "evil://note"], ["prompt", "evil"]])
def test_server_text_cannot_drive_the_terminal(argv: list[str]) -> None:
    proc = mcpsync("--stdio", ESCAPES, *argv)
    for stream in (proc.stdout, proc.stderr):
        assert not any(c in stream for c in RAW_CONTROLS), repr(stream)
    assert "pwned" in proc.stdout + proc.stderr  # shown, made visible, not dropped
    seen = _on_a_terminal("--stdio", ESCAPES, *argv)
    assert not any(c in seen for c in RAW_CONTROLS), repr(seen)
    if argv == ["call", "taunt"]:
        assert "before" + SHOWN in seen and "embedded" + SHOWN in seen


def test_json_output_stays_exact_json_but_escapes_every_control() -> None:
    from servers.escape_server import HOSTILE

    proc = mcpsync("--stdio", ESCAPES, "call", "shaped", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert not any(c in proc.stdout for c in RAW_CONTROLS)
    assert json.loads(proc.stdout)["structuredContent"] == {"k": "shaped" + HOSTILE}
