"""``mcpsync demo`` / ``python -m mcpsync demo``, and the demo server itself."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcpsync import types
from mcpsync.cli.demo import run_demo
from mcpsync.demo import build_server

#: Bound on one whole demo run: it spawns a server and makes a dozen calls (~1.5 s here).
DEMO_TIMEOUT = 60


def assert_full_session(output: str) -> None:
    """The printed session shows every part of a real exchange."""
    assert "mcpsync-demo" in output  # server info
    # The demo server is dual-era, so mode="auto" settles on the stateless revision.
    assert "protocol:     2026-07-28" in output  # negotiated version
    for tool in ("echo(text: string)", "add(a: number, b: number)",
                 "countdown(n?: integer, delay?: number)", "weather(city: string)"):
        assert tool in output  # tools listed, with their types
    assert "add(a=2, b=3) -> 5" in output  # a tool call
    assert "[####################] 5/5" in output  # progress, as plain lines off a TTY
    assert output.count("progress [") == 5
    assert "-> Liftoff!" in output
    assert '"conditions"' in output  # structured content
    assert "| mcpsync demo server" in output  # resource text
    assert "| Hello, Ada!" in output  # resource template
    assert "completions for greet style 'f': friendly, formal" in output
    assert "user: Write a short pirate greeting for Ada." in output  # the prompt
    assert "Done" in output


def run_command(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )


@pytest.mark.timeout(DEMO_TIMEOUT + 10)
def test_python_dash_m_mcpsync_demo() -> None:
    proc = run_command([sys.executable, "-m", "mcpsync", "demo"])
    assert proc.returncode == 0, proc.stderr
    assert_full_session(proc.stdout)
    assert "\r" not in proc.stdout  # not a TTY: no bar redrawing


@pytest.mark.timeout(DEMO_TIMEOUT + 10)
def test_console_script() -> None:
    script = shutil.which("mcpsync", path=os.path.dirname(sys.executable)) or shutil.which(
        "mcpsync"
    )
    if script is None:
        pytest.fail("the mcpsync console script is not installed (pip install -e .)")
    proc = run_command([script, "demo"])
    assert proc.returncode == 0, proc.stderr
    assert_full_session(proc.stdout)


@pytest.mark.timeout(DEMO_TIMEOUT + 10)
def test_run_demo_in_process_writes_to_the_given_stream() -> None:
    out = io.StringIO()
    assert run_demo(out) == 0
    assert_full_session(out.getvalue())


def test_cli_without_a_command_prints_help_and_fails() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsync"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2
    assert "demo" in proc.stderr


@pytest.mark.timeout(30)
def test_demo_server_in_process() -> None:
    """The same server, through FakeServer.client(): handy for checking its tools quickly."""
    with build_server().client(timeout=10) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        report = client.call_tool("weather", {"city": "Oslo"}).structured_content
        assert report is not None and set(report) == {"city", "temperature_c", "conditions"}
        assert client.call_tool("countdown", {"n": 2, "delay": 0}).text == "Liftoff!"
        contents = client.read_resource("demo://greeting/Bob").contents
        assert (
            isinstance(contents[0], types.TextResourceContents)
            and contents[0].text == "Hello, Bob!"
        )
        assert client.complete(types.PromptReference(name="greet"), "style", "p").values == [
            "pirate"
        ]


def test_progress_is_a_redrawn_bar_on_a_terminal() -> None:
    # The demo draws with the command line's ProgressBar, narrower and indented.
    from mcpsync.cli.output import ProgressBar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    printer = ProgressBar(out, width=20, empty="-", indent="    ")
    printer(1, 2, "half")
    assert not printer.finished.is_set()
    printer(2, 2, None)
    assert printer.finished.is_set()
    printer.done()
    text = out.getvalue()
    assert text.count("\r") == 2 and "\x1b[K" in text
    assert "\r    [##########----------] 1/2 half" in text
    assert text.endswith("[####################] 2/2\x1b[K\n")


#: Runs of the demo server checked for a clean exit (the crash hit about 1 run in 12).
CLEAN_EXIT_RUNS = 50


@pytest.mark.timeout(CLEAN_EXIT_RUNS * 10 + 60)
def test_demo_server_exits_cleanly_every_time() -> None:
    """Tool threads answer while the server shuts down; it must still exit 0, at once.

    Serving used to return while a daemon tool thread was still inside
    ``stdout.flush()``: the interpreter then aborted with ``Fatal Python error:
    _enter_buffered_busy`` and the client waited out its grace and sent SIGTERM.
    A long ``close_grace`` makes a slow exit visible as time, not as a signal.
    """
    import time

    from mcpsync import Client
    from mcpsync.transports.stdio.transport import StdioTransport

    for run in range(CLEAN_EXIT_RUNS):
        stderr: list[str] = []
        transport = StdioTransport(
            sys.executable, ["-m", "mcpsync.demo"], stderr=stderr.append, close_grace=30.0
        )
        with Client(transport=transport, timeout=30) as client:
            assert client.call_tool("add", {"a": run, "b": 1}).text == str(run + 1)
            # progress notifications, written by the tool thread, right before the close
            assert client.call_tool("countdown", {"n": 2, "delay": 0}).text == "Liftoff!"
            started = time.monotonic()
        took = time.monotonic() - started
        assert transport.returncode == 0, (run, transport.returncode, stderr)
        assert transport.signals_sent == [], (run, stderr)
        assert not [line for line in stderr if "Fatal Python error" in line], (run, stderr)
        assert took < 10.0, (run, took)  # ~0.05 s normally; the grace is 30 s


#: CLI calls checked for a clean, prompt exit of the demo server they start.
CLI_RUNS = 20


@pytest.mark.timeout(CLI_RUNS * 20 + 60)
def test_cli_calls_on_the_demo_server_exit_cleanly() -> None:
    """``mcpsync --stdio 'mcpsync demo --serve' call ...``, repeated; --debug shows the server's stderr."""
    import time

    script = Path(sys.executable).parent / "mcpsync"
    server = f"{script} demo --serve"
    for run in range(CLI_RUNS):
        started = time.monotonic()
        proc = run_command([str(script), "--debug", "--close-grace", "30", "--stdio", server,
                            "call", "countdown", "n=2", "delay=0"])
        took = time.monotonic() - started
        assert (proc.returncode, proc.stdout) == (0, "Liftoff!\n"), (run, proc.stderr[-2000:])
        assert "Fatal Python error" not in proc.stderr, run
        assert "exit code 0" in proc.stderr, run  # the transport logs the server's status
        assert took < 15, (run, took)  # ~0.5 s normally; a stuck server would cost the 30 s grace


def test_serve_and_print_config(tmp_path: Path) -> None:
    proc = run_command([sys.executable, "-m", "mcpsync", "demo", "--print-config"])
    assert proc.returncode == 0, proc.stderr
    config = json.loads(proc.stdout)
    assert config == {"mcpServers": {"demo": {"command": sys.executable,
                                              "args": ["-m", "mcpsync.demo"]}}}
    # The file works from anywhere: a client started in another directory uses it.
    path = tmp_path / "mcp.json"
    path.write_text(proc.stdout)
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsync", "--config", str(path), "call", "add", "a=1", "b=2"],
        capture_output=True, text=True, timeout=DEMO_TIMEOUT, cwd=tmp_path,
    )
    assert (proc.returncode, proc.stdout) == (0, "3\n"), proc.stderr
    # `mcpsync demo --serve` speaks MCP on stdin/stdout.
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsync", "demo", "--serve"], input=json.dumps(request) + "\n",
        capture_output=True, text=True, timeout=DEMO_TIMEOUT, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"]["serverInfo"]["name"] == "mcpsync-demo"
