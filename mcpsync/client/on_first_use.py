"""Methods of :class:`~mcpsync.client.Client` whose feature module loads on first use.

Tasks, skills and MCP Apps are three modules a client that only lists and calls tools
never runs; imported with the client they cost every process about 0.3 MB (bench/: the
RSS row of 50 stdio clients).  :class:`on_first_use` stands in the class for such a
method until the first lookup, which imports the module and puts the plain function
there in its place: every later call is an ordinary method call.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["on_first_use"]


class on_first_use:  # noqa: N801 - used like a function in the class body
    """``name = on_first_use("mcpsync.client.tasks", "task")`` in a class body.

    Safe from any thread: the import system serializes the import, and every thread
    puts the same function in place.
    """

    def __init__(self, module: str, function: str) -> None:
        self._module, self._function, self._name = module, function, function

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        function = getattr(importlib.import_module(self._module), self._function)
        if owner is not None:
            setattr(owner, self._name, function)
        return function if instance is None else function.__get__(instance, owner)
