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


def test_tasks_skills_and_apps_load_on_first_use() -> None:
    # A stdio client that lists and calls tools never imports them (0.3 MB a process, bench/);
    # the first lookup of such a method imports its module and leaves the plain function there.
    code = (
        "import sys, threading, mcpsync\n"
        "later = ('mcpsync.client.tasks', 'mcpsync.client.task_handle', 'mcpsync.client.skills',"
        " 'mcpsync.client.apps')\n"
        "with mcpsync.Client.stdio([sys.executable, '-m', 'mcpsync.demo']) as client:\n"
        "    client.call_tool('add', {'a': 1, 'b': 2})\n"
        "    print(sorted(m for m in later if m in sys.modules))\n"
        "    methods = []\n"
        "    threads = [threading.Thread(target=lambda: methods.append(client.list_tasks)) for _ in range(8)]\n"
        "    [t.start() for t in threads]; [t.join(10) for t in threads]\n"
        "    print(len(methods), all(m.__func__ is methods[0].__func__ for m in methods),"
        " type(vars(mcpsync.Client)['list_tasks']).__name__, 'mcpsync.client.tasks' in sys.modules)\n"
        "    print(mcpsync.TaskHandle.__module__, mcpsync.Client.read_app.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "8 True function True",
                                       "mcpsync.client.task_handle mcpsync.client.apps"]
