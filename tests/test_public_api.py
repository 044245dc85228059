"""The public names are exactly what API.md documents (and nothing leaks in by accident)."""

from __future__ import annotations

import subprocess
import sys

import mcpsync
from mcpsync import exceptions


def test_all_is_exactly_the_public_namespace() -> None:
    public = {name for name in dir(mcpsync) if not name.startswith("_")} - {"annotations"}
    # Submodules become attributes when imported; only ``types`` is part of __all__.
    modules = {name for name in public if type(getattr(mcpsync, name)).__name__ == "module"}
    assert set(mcpsync.__all__) - {"__version__"} == (public - modules) | {"types"}
    for name in mcpsync.__all__:
        assert hasattr(mcpsync, name), name


def test_every_exception_derives_from_mcp_error() -> None:
    for name in exceptions.__all__:
        obj = getattr(exceptions, name)
        if isinstance(obj, type):
            assert issubclass(obj, mcpsync.McpError), name
    assert issubclass(mcpsync.RequestTimeout, TimeoutError)


def test_import_is_cheap_and_side_effect_free() -> None:
    code = (
        "import sys, threading; import mcpsync; "
        "heavy = [m for m in ('requests', 'keyring', 'jsonschema', 'urllib3', 'cattrs', 'mcpsync.types.completion', 'mcpsync.types.content') if m in sys.modules]; "
        "print(heavy, threading.active_count())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] 1"
