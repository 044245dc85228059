"""The architecture, checked: layers and cycles (import-linter), the package map, public paths.

docs/design.rst draws the layers; the contracts in pyproject.toml ``[tool.importlinter]`` are
the same drawing in a form a machine checks, so the structure cannot silently rot.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "mcpsync"

#: Import paths that users, the docs or the README name; each must keep working.
PUBLIC_PATHS = {
    "mcpsync": ["Client", "PendingCall", "Handle", "Subscription", "McpError", "types"],
    "mcpsync.client": ["Client", "PendingCall", "Handle"],
    "mcpsync.exceptions": ["McpError", "RequestTimeout", "ConnectionClosed"],
    "mcpsync.types": ["Tool", "CallToolResult", "to_wire", "from_wire"],
    "mcpsync.transports.base": ["Transport"],
    "mcpsync.transports.memory": ["MemoryTransport"],
    "mcpsync.transports.stdio": ["StdioTransport"],
    "mcpsync.transports.http": ["StreamableHTTPTransport"],
    "mcpsync.transports.websocket": ["WebSocketTransport"],
    "mcpsync.auth": ["OAuth", "BearerToken", "FileTokenStore", "MemoryTokenStore", "LoopbackLogin"],
    "mcpsync.testing": ["FakeServer"],
    "mcpsync.shared": ["SharedClient"],
    "mcpsync.config": ["load_config", "ConfigError"],
    "mcpsync.cli": ["main"],
    "mcpsync.demo": [],
    "mcpsync.group": ["ClientGroup"],
    "mcpsync.llm": ["openai_tools", "anthropic_tools", "run_tool_calls"],
}


@pytest.mark.parametrize("module", sorted(PUBLIC_PATHS))
def test_public_import_paths_keep_working(module: str) -> None:
    mod = importlib.import_module(module)
    for name in PUBLIC_PATHS[module]:
        assert hasattr(mod, name), f"{module}.{name}"


@pytest.mark.timeout(120)
def test_import_linter_contracts_are_kept() -> None:
    """Layers (cli > client > {transports, auth} > rpc > types > exceptions) and no cycles."""
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.fail("import-linter is not installed: it is part of the test extra")
    proc = subprocess.run(
        [str(lint), "--config", str(REPO / "pyproject.toml")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_at_most_twelve_modules_directly_in_the_package() -> None:
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(modules) <= 12, modules


def _packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("init", _packages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_package_says_its_job_and_what_it_may_import(init: Path) -> None:
    if init == PACKAGE:
        return  # the top-level package is the public face, documented in docs/api.rst
    doc = ast.get_docstring(ast.parse((init / "__init__.py").read_text()))
    assert doc, f"{init} has no docstring"
    assert "May import" in doc, f"{init}'s docstring does not say what it may import"


def _all_subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _all_subclasses(sub)
    return found


def test_every_exception_class_is_in_the_drawn_tree() -> None:
    """exceptions.py draws THE tree: every McpError subclass anywhere in mcpsync is in it."""
    import pkgutil

    import mcpsync
    from mcpsync import exceptions

    for info in pkgutil.walk_packages(mcpsync.__path__, "mcpsync."):
        if ".contrib." in info.name or info.name.endswith(".contrib"):
            continue  # framework integrations need their framework configured to import
        importlib.import_module(info.name)
    drawn = exceptions.__doc__ or ""
    missing = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _all_subclasses(exceptions.McpError)
        if cls.__module__.startswith("mcpsync.") and not cls.__name__.startswith("_")
        and f" {cls.__name__}" not in drawn
    )
    assert missing == [], f"not in the tree drawn in mcpsync/exceptions.py: {missing}"
