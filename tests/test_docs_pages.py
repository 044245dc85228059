"""The getting-started and framework pages, run as printed (as tests/test_readme.py does for README).

Each page is walked block by block, in order; a page test fails if a block is left over, so a
new block must be run (or compared) here. What happens to each kind of block:

* ``console``: each ``$ command`` runs in bash, in one shell session per page (the variables it
  exports, the virtualenv it activates and the directory it changes to carry over), in a fresh
  directory that is not the checkout; the lines after it are its expected output (stdout and
  stderr, as a terminal shows them). A line ``...`` stands for any lines, ``...`` in a line for
  any text, ``/home/you/project`` for the page's directory. Virtualenvs are made and filled by
  the pages' own ``pip install`` commands.
* ``python``/``ini`` whose first line is ``# some/path``: written to that file (``# examples/...``:
  compared with that example file instead, which its own tests run).
* ``testcode``/``testoutput``/``testsetup``/``testcleanup``: run by the doctest build
  (``sphinx-build -b doctest``, which .ci/run runs); only taken here.
* anything else is handled by name in the page's test (say, ``json`` saved as the file the
  prose names).

Not verbatim, and why:

* ``$MCPSYNC_CLONE`` is this checkout: the quickstart's ``export MCPSYNC_CLONE="$PWD"`` runs in
  it; the other pages start with the variable set, as the quickstart leaves it.
* deployment.rst: uWSGI listens on a free port too, serving an ``app.py`` the test writes; the
  Celery module's ``my-mcp-server`` is a script the test puts on PATH, and its task runs eagerly
  (``apply()``), so no Redis broker is needed.
* gunicorn listens on a free port (``GUNICORN_CMD_ARGS=--bind``), not 8000, and the ``curl``
  lines get that port: 8000 may be taken on a shared machine. It runs in the background while
  the next block runs, and is stopped (SIGTERM) after it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.contrib_support import LineWaiter, free_port

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: Bounds: a pip install (a fresh virtualenv on a loaded machine), any other command.
INSTALL_TIMEOUT = 600
COMMAND_TIMEOUT = 180

pytestmark = pytest.mark.timeout(1500)

_DIRECTIVE = re.compile(r"(\s*)\.\. (code-block|code|testcode|testoutput|testsetup|testcleanup|literalinclude)::\s*(\S*)")
DOCTEST_KINDS = ("testcode", "testoutput", "testsetup", "testcleanup")


@attrs.frozen
class Block:
    page: str
    line: int
    kind: str  # the directive, or "literal" for a paragraph's ``::``
    lang: str
    text: str

    @property
    def path(self) -> str | None:
        """The file a ``# path`` first line names."""
        first = self.text.splitlines()[0]
        found = re.fullmatch(r"# ([\w./-]+\.(?:py|ini))", first)
        return found.group(1) if found else None

    @property
    def body(self) -> str:
        """The text without a ``# path`` first line."""
        return self.text.split("\n", 1)[1] if self.path else self.text

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.kind} {self.lang})"


def _body(lines: list[str], start: int, indent: int) -> tuple[str, int]:
    """The indented block from *start* (options skipped), dedented; and the index after it."""
    i = start
    while i < len(lines) and lines[i].strip().startswith(":") and len(lines[i]) - len(lines[i].lstrip()) > indent:
        i += 1
    body: list[str] = []
    while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
        body.append(lines[i])
        i += 1
    return textwrap.dedent("\n".join(body)).strip("\n"), i


def page_blocks(page: str) -> list[Block]:
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = _DIRECTIVE.match(line)
        if directive:
            text, end = _body(lines, i + 1, len(directive.group(1)))
            found.append(Block(page, i + 1, directive.group(2), directive.group(3), text))
            i = end
        elif line.rstrip().endswith("::") and not line.lstrip().startswith(".."):
            text, end = _body(lines, i + 1, len(line) - len(line.lstrip()))
            found.append(Block(page, i + 1, "literal", "", text))
            i = end
        else:
            i += 1
    return found


class Page:
    """The blocks of a page, taken in order; :meth:`done` checks that none was left."""

    def __init__(self, name: str) -> None:
        self.blocks = page_blocks(name)
        self.name = name

    def take(self, kind: str, lang: str = "") -> Block:
        assert self.blocks, f"{self.name}: no block left, expected a {kind} {lang} block"
        block = self.blocks.pop(0)
        assert (block.kind, block.lang) == (kind, lang), f"{block}: expected a {kind} {lang} block"
        return block

    def doctests(self) -> None:
        """Take the doctest blocks that come next (the doctest build runs them)."""
        while self.blocks and self.blocks[0].kind in DOCTEST_KINDS:
            self.blocks.pop(0)

    def done(self) -> None:
        assert not self.blocks, f"blocks not run by tests/test_docs_pages.py: {', '.join(map(str, self.blocks))}"


def commands(block: Block) -> list[tuple[str, list[str]]]:
    """A console block's ``$ command`` lines, each with the output lines printed after it."""
    found: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        else:
            assert found, f"{block}: output before any command"
            found[-1][1].append(line)
    return found


def assert_output(expected: list[str], actual: str, project: Path, what: str) -> None:
    """*actual* is what *expected* shows (see the module docstring for ``...``)."""
    pattern = ""
    for line in expected:
        line = line.replace("/home/you/project", str(project)).rstrip()
        if line.strip() == "...":
            pattern += r"(?:.*\n)*?"
        else:
            pattern += re.escape(line).replace(re.escape("..."), ".*") + r"\n"
    shown = "".join(f"{line.expandtabs().rstrip()}\n" for line in actual.splitlines())
    assert re.fullmatch(pattern, shown), f"{what} printed:\n{shown}\nthe page shows:\n" + "\n".join(expected)


def example_matches(block: Block) -> None:
    """A ``# examples/...`` block is a verbatim part of that file."""
    assert block.path is not None and block.path.startswith("examples/"), block
    source = (ROOT / block.path).read_text(encoding="utf-8")
    assert block.body in source, f"{block} differs from {block.path}"


def user_env() -> dict[str, str]:
    """This environment as a fresh shell has it: no virtualenv, no mcpsync or test settings."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "DJANGO_SETTINGS_MODULE", "FLASK_APP")
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith(("MCP", "PYTEST_", "DJANGO_", "FLASK_", "GUNICORN_"))}
    env["PATH"] = os.pathsep.join(
        d for d in env.get("PATH", "").split(os.pathsep)
        if d and not Path(d, "mcpsync").exists() and not Path(d).resolve().is_relative_to(ROOT)
    )
    env["NO_COLOR"] = "1"
    return env


@attrs.define
class Ran:
    command: str
    status: int
    output: str


class Shell:
    """One bash session, kept between commands in files: exported variables and the directory."""

    def __init__(self, state_dir: Path, cwd: Path, env: dict[str, str] | None = None) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        self.state = state_dir / "exports.sh"
        self.cwd_file = state_dir / "cwd"
        self.env = env or user_env()
        self.state.write_text("")
        self.cd(cwd)
        self.servers: list[subprocess.Popen[bytes]] = []

    def cd(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.cwd_file.write_text(str(path))

    @property
    def cwd(self) -> Path:
        return Path(self.cwd_file.read_text().strip())

    def fork(self, state_dir: Path, cwd: Path) -> Shell:
        """A second session that starts with this one's variables (an activated virtualenv)."""
        other = Shell(state_dir, cwd, self.env)
        other.state.write_text(self.state.read_text())
        return other

    def _script(self, command: str) -> str:
        state, cwd = shlex.quote(str(self.state)), shlex.quote(str(self.cwd_file))
        return (f"set -o pipefail\nsource {state}\ncd \"$(cat {cwd})\"\n{command}\nstatus=$?\n"
                f"export -p > {state}.new && mv {state}.new {state}\npwd > {cwd}\nexit $status\n")

    def run(self, command: str) -> Ran:
        timeout = INSTALL_TIMEOUT if "pip install" in command else COMMAND_TIMEOUT
        proc = subprocess.run(  # noqa: PLW1510 - the status is checked by the caller
            ["bash", "-c", self._script(command)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, env=self.env, timeout=timeout,
        )
        return Ran(command, proc.returncode, proc.stdout)

    def check(self, command: str, expected: list[str] | None = None, *, status: int = 0) -> Ran:
        ran = self.run(command)
        assert ran.status == status, f"$ {command}\nexited {ran.status} (expected {status}):\n{ran.output[-4000:]}"
        if expected:
            assert_output(expected, ran.output, self.cwd, f"$ {command}")
        return ran

    def start_gunicorn(self, command: str, port: int) -> LineWaiter:
        assert command.startswith("gunicorn ")
        proc = subprocess.Popen(
            ["bash", "-c", self._script(f"GUNICORN_CMD_ARGS='--bind 127.0.0.1:{port}' exec {command}")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env, start_new_session=True,
        )
        self.servers.append(proc)
        waiter = LineWaiter(proc.stdout)
        waiter.wait(rf"Listening at: http://127\.0\.0\.1:{port}", timeout=COMMAND_TIMEOUT)
        waiter.wait(r"Booting worker", timeout=COMMAND_TIMEOUT)
        return waiter

    def stop_servers(self) -> None:
        """SIGTERM each server started here (gunicorn stops gracefully), SIGKILL what is left."""
        for proc in self.servers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
                assert proc.stdout is not None
                proc.stdout.close()
        self.servers.clear()


def processes_under(directory: Path) -> list[str]:
    """Command lines of running processes that run something from *directory* (its virtualenv)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(directory) in cmdline:
                found.append(f"{entry.name}: {cmdline}")
    return found


def assert_no_process_left(directory: Path) -> None:
    """The servers an app started ended with it (closed at exit), within a bound."""
    deadline = time.monotonic() + 15
    while processes_under(directory) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_under(directory), processes_under(directory)


def run_console(shell: Shell, block: Block, *, port: int | None = None) -> list[Ran]:
    """Every command of a console block, its output checked when the page shows one."""
    done = []
    for command, expected in commands(block):
        if command.startswith("gunicorn "):
            assert port is not None and not expected, block
            shell.start_gunicorn(command, port)
            continue
        if port is not None:
            command = command.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        failing = any(line.startswith(("CommandError", "Error:", "Traceback")) for line in expected)
        ran = shell.run(command)
        assert (ran.status != 0) if failing else (ran.status == 0), f"$ {command}\nexited {ran.status}:\n{ran.output[-4000:]}"
        if expected:
            assert_output(expected, ran.output, shell.cwd, f"{block}: $ {command}")
        done.append(ran)
    return done


def write_file(shell: Shell, block: Block) -> None:
    assert block.path is not None and not block.path.startswith("examples/"), block
    target = shell.cwd / block.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(block.body + "\n", encoding="utf-8")


# -- the quickstart (its virtualenv is the config page's too) -------------------------------------


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Shell, dict[str, Ran]]]:
    """The quickstart, run block by block; its shell (``.venv`` active) and the command results."""
    base = tmp_path_factory.mktemp("quickstart")
    shell = Shell(base / "state", ROOT)
    page = Page("quickstart.rst")
    results: dict[str, Ran] = {}
    [(export, _)] = commands(page.take("code-block", "console"))
    assert export == 'export MCPSYNC_CLONE="$PWD"'
    shell.check(export)  # in the clone, as the page says
    shell.cd(base / "project")
    for block in (page.take("code-block", "console"), page.take("code-block", "console")):
        for ran in run_console(shell, block):
            results[ran.command] = ran
    page.doctests()
    example_matches(page.take("code-block", "python"))
    page.doctests()
    for ran in run_console(shell, page.take("code-block", "console")):
        results[ran.command] = ran
    printed = json.loads(page.take("code-block", "json").text)
    results["printed config"] = Ran("", 0, json.dumps(printed))
    example_matches(page.take("code-block", "python"))
    page.doctests()
    page.done()
    yield shell, results


def test_the_quickstart_runs_as_printed(quickstart: tuple[Shell, dict[str, Ran]]) -> None:
    shell, results = quickstart
    venv = shell.cwd / ".venv"
    assert results['python3 -m venv .venv && .venv/bin/pip install "${MCPSYNC_CLONE}"'].status == 0
    assert "-> Liftoff!" in results["mcpsync demo"].output
    assert results["mcpsync --stdio 'mcpsync demo --serve' call add a=2 b=3"].output == "5\n"
    assert "echo(" in results["mcpsync --stdio 'npx -y @modelcontextprotocol/server-everything' tools"].output
    assert results["mcpsync --config mcp.json --server demo call echo text=hello"].output == "hello\n"
    # The page shows what --print-config wrote, with the reader's directory for ours.
    written = json.loads((shell.cwd / "mcp.json").read_text())
    assert written["mcpServers"]["demo"]["command"].startswith(str(venv / "bin" / "python"))
    assert written == json.loads(results["printed config"].output.replace("/home/you/project", str(shell.cwd)))


def test_the_cli_pages_mode_example_runs_as_printed(quickstart: tuple[Shell, dict[str, Ran]]) -> None:
    [block] = [b for b in page_blocks("cli.rst") if "--mode legacy" in b.text]
    run_console(quickstart[0], block)


# -- config.rst -----------------------------------------------------------------------------------


def test_the_config_page_runs_as_printed(quickstart: tuple[Shell, dict[str, Ran]], tmp_path: Path) -> None:
    from mcpsync.config import ConfigWarning, load_config

    shell = quickstart[0].fork(tmp_path / "state", tmp_path / "project")
    page = Page("config.rst")
    # Cursor's file in a home directory of the test's own: the example reads ~/.cursor/mcp.json.
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"github": {"url": "https://mcp.example.com/mcp"}}}))
    script = tmp_path / "from_config.py"
    script.write_text(page.take("code-block", "python").text)
    ran = shell.run(f"HOME={shlex.quote(str(home))} python {shlex.quote(str(script))}")
    assert (ran.status, ran.output) == (0, ""), ran.output  # read the file (else: ConfigError)

    def save(block: Block, name: str) -> dict[str, Any]:
        (shell.cwd / name).write_text(block.text)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConfigWarning)  # no key of the page's is unknown
            load_config(shell.cwd / name, expand_variables=False)
        loaded: dict[str, Any] = json.loads(block.text)["mcpServers"]
        return loaded

    save(page.take("code-block", "json"), "mcp.json")  # "Saved as mcp.json"
    run_console(shell, page.take("code-block", "console"))
    for name in ("timing.json", "mode.json"):
        entries = save(page.take("code-block", "json"), name)
        page.doctests()
        for server in entries:  # each entry of the page's examples works (the demo server)
            shell.check(f"mcpsync --config {name} --server {server} call add a=1 b=2", ["3"])
    page.doctests()
    page.done()


# -- django.rst, flask.rst -----------------------------------------------------------------------


def web_shell(tmp_path: Path) -> Shell:
    """A shell in a fresh project directory, ``$MCPSYNC_CLONE`` set as the quickstart leaves it."""
    return Shell(tmp_path / "state", tmp_path / "project", {**user_env(), "MCPSYNC_CLONE": str(ROOT)})


def serve_and_ask(shell: Shell, page: Page, project: Path) -> None:
    """The block that starts gunicorn (after, maybe, other commands), then the ``curl`` block;
    afterwards no server process of the app is left."""
    port = free_port()
    try:
        run_console(shell, page.take("code-block", "console"), port=port)
        run_console(shell, page.take("code-block", "console"), port=port)
    finally:
        shell.stop_servers()
    assert_no_process_left(project)


def run_the_tests_section(shell: Shell, page: Page, project: Path) -> None:
    """The page's last section: install pytest, write its three files, run pytest."""
    run_console(shell, page.take("code-block", "console"))
    for _ in range(3):  # pytest.ini, the fake server, the tests
        write_file(shell, page.take("code-block", page.blocks[0].lang))
    run_console(shell, page.take("code-block", "console"))
    page.done()
    assert_no_process_left(project)


def test_the_django_page_runs_as_printed(tmp_path: Path) -> None:
    shell, page, project = web_shell(tmp_path), Page("django.rst"), tmp_path / "project"
    for _ in range(3):  # the virtualenv, the secrets, startproject
        run_console(shell, page.take("code-block", "console"))
    for _ in range(3):  # settings.py, urls.py, views.py
        write_file(shell, page.take("code-block", "python"))
    assert (project / "mysite" / "wsgi.py").is_file() and (project / "mysite" / "__init__.py").is_file()
    serve_and_ask(shell, page, project)  # migrate and gunicorn; curl
    # Each mistake added at the end of settings.py, then removed again.
    settings = project / "mysite" / "settings.py"
    original = settings.read_text()
    for _ in range(2):
        settings.write_text(original + page.take("code-block", "python").text + "\n")
        run_console(shell, page.take("code-block", "console"))
    settings.write_text(original)
    run_console(shell, page.take("code-block", "console"))  # manage.py mcp
    run_the_tests_section(shell, page, project)


def test_the_flask_page_runs_as_printed(tmp_path: Path) -> None:
    shell, page, project = web_shell(tmp_path), Page("flask.rst"), tmp_path / "project"
    for _ in range(2):  # the virtualenv, the secrets
        run_console(shell, page.take("code-block", "console"))
    write_file(shell, page.take("code-block", "python"))  # app.py
    serve_and_ask(shell, page, project)  # gunicorn; curl
    migration_matches_the_store(page.take("literal"))
    while page.blocks[0].lang == "html+jinja":  # a template (the CSRF form of the blueprint)
        template_renders_in_the_app(shell, page.take("code-block", "html+jinja"))
    run_console(shell, page.take("code-block", "console"))  # flask mcp
    run_the_tests_section(shell, page, project)


def template_renders_in_the_app(shell: Shell, block: Block) -> None:
    """A Jinja template of the page renders in a request of the page's app, every name defined."""
    script = shell.cwd.parent / f"render_{block.line}.py"
    script.write_text(textwrap.dedent(f"""\
        import sys

        import jinja2
        from flask import render_template_string

        sys.path.insert(0, ".")  # the app's directory, where this runs
        from app import create_app

        app = create_app()
        app.jinja_env.undefined = jinja2.StrictUndefined
        with app.test_request_context():
            print(render_template_string({block.text!r}))
        """))
    ran = shell.check(f"python {shlex.quote(str(script))}")
    assert 'value=""' not in ran.output and "{{" not in ran.output, ran.output


def migration_matches_the_store(block: Block) -> None:
    """The hand-written Alembic migration makes the table the store defines."""
    import sqlalchemy as sa

    from mcpsync.contrib.flask.stores import token_table

    made = sa.MetaData()

    class Operations:
        @staticmethod
        def create_table(name: str, *columns: sa.Column[Any]) -> None:
            sa.Table(name, made, *columns)

    exec(block.text, {"op": Operations, "sa": sa})  # noqa: S102 - the page's own code
    ours = sa.MetaData()
    token_table(ours)

    def shape(metadata: sa.MetaData) -> list[tuple[str, str, bool, bool]]:
        [table] = metadata.tables.values()
        return [(c.name, repr(c.type), c.primary_key, c.nullable) for c in table.columns]

    assert shape(made) == shape(ours)


# -- testing.rst, deployment.rst -----------------------------------------------------------------


def test_the_testing_page_is_doctests() -> None:
    page = Page("testing.rst")
    page.doctests()
    page.done()


def test_the_deployment_page_shows_the_examples_as_they_are(tmp_path: Path) -> None:
    page = Page("deployment.rst")
    while page.blocks:
        block = page.blocks.pop(0)
        if block.kind in DOCTEST_KINDS:
            continue
        if block.kind == "code-block" and (block.path or "").startswith("examples/"):
            example_matches(block)
        elif block.kind == "literal" and block.text.startswith("signal.signal(signal.SIGTERM,"):
            a_sigterm_handler_closes_the_client(block, tmp_path)
        elif block.kind == "literal" and "monkey" in block.text:
            each_monkey_patch_line_works(block, tmp_path)
        elif block.kind == "literal" and block.text.startswith("uwsgi "):
            the_uwsgi_command_serves_a_module_level_client(block, tmp_path)
        elif block.kind == "literal" and "from celery import Celery" in block.text:
            the_celery_module_runs_its_task_and_closes(block, tmp_path)
        else:
            raise AssertionError(f"{block}: not run by tests/test_docs_pages.py")


def a_sigterm_handler_closes_the_client(block: Block, tmp_path: Path) -> None:
    """The page's SIGTERM handler, in a process with a connected client: SIGTERM ends the
    process (status 0) and its server."""
    script = tmp_path / "handler.py"
    script.write_text(textwrap.dedent("""\
        import signal, sys, time
        import mcpsync

        client = mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"], timeout=30)
        client.call_tool("add", {"a": 1, "b": 2})
        """) + block.text + "\nprint(client._conn.transport.pid, flush=True)\ntime.sleep(120)\n")
    with subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        try:
            server = int(proc.stdout.readline())
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=COMMAND_TIMEOUT) == 0
        finally:
            proc.kill()
    deadline = time.monotonic() + 15
    while Path(f"/proc/{server}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{server}").exists(), "the server outlived the process"


def each_monkey_patch_line_works(block: Block, tmp_path: Path) -> None:
    """Each line, first thing in a program that then calls a stdio server."""
    for line in block.text.splitlines():
        script = tmp_path / "patched.py"
        script.write_text(line + textwrap.dedent("""
            import sys
            import mcpsync

            with mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"], timeout=30) as client:
                print(client.call_tool("add", {"a": 1, "b": 2}).text)
            """))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT)
        assert (done.returncode, done.stdout) == (0, "3\n"), f"{line}: {done.stderr[-3000:]}"


def the_uwsgi_command_serves_a_module_level_client(block: Block, tmp_path: Path) -> None:
    """The command as printed (on a free port, not 8000), serving an ``app.py`` with a
    module-level client; SIGTERM stops it (``--die-on-term``)."""
    port = free_port()
    command = block.text.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    # Under uWSGI, sys.executable is not a Python: the app names the interpreter.
    (tmp_path / "app.py").write_text(textwrap.dedent(f"""\
        import mcpsync

        client = mcpsync.Client.stdio([{sys.executable!r}, "-m", "mcpsync.demo"], timeout=20)

        def application(environ, start_response):
            text = client.call_tool("add", {{"a": 2, "b": 3}}).text
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [text.encode()]
        """))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with subprocess.Popen(["bash", "-c", command], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, start_new_session=True) as proc:
        try:
            body = ""
            deadline = time.monotonic() + COMMAND_TIMEOUT
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as reply:
                        body = reply.read().decode()
                    break
                except OSError:
                    time.sleep(0.2)
            assert body == "5", f"uwsgi answered {body!r} (exit {proc.poll()})"
            # To the master (bash ran the one command with exec), as systemd sends it: a SIGTERM
            # to the whole group also reaches each worker, which takes it as a slow reload.
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def the_celery_module_runs_its_task_and_closes(block: Block, tmp_path: Path) -> None:
    """The module as printed, run eagerly (``apply()``: no broker, so no Redis); its
    ``my-mcp-server`` is a script on PATH serving ``lookup``; the shutdown handler closes the
    client."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    server = bin_dir / "my-mcp-server"
    server.write_text(f"#!{sys.executable}\n" + textwrap.dedent("""\
        from mcpsync.testing import FakeServer

        server = FakeServer("lookup")

        @server.tool()
        def lookup(query: str) -> str:
            return f"found {query}"

        server.run_stdio()
        """))
    server.chmod(0o755)
    (tmp_path / "tasks.py").write_text(block.text + "\n")
    driver = textwrap.dedent("""\
        from celery.signals import worker_process_shutdown
        import tasks

        print(tasks.lookup.apply(("mcp",)).get(timeout=30))
        worker_process_shutdown.send(sender=None)
        print(tasks.client.closed)
        """)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-c", driver], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=COMMAND_TIMEOUT)
    assert (done.returncode, done.stdout) == (0, "found mcp\nTrue\n"), done.stderr[-3000:]


def test_no_page_includes_code_that_a_repository_page_would_not_show() -> None:
    for page in ("quickstart.rst", "django.rst", "flask.rst", "config.rst", "testing.rst", "deployment.rst"):
        assert not [b for b in page_blocks(page) if b.kind == "literalinclude"], page
