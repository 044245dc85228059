"""mcpsync: a synchronous, threaded client for the Model Context Protocol.

::

    import mcpsync

    with mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"]) as client:
        print(client.call_tool("add", {"a": 1, "b": 2}).text)

A :class:`Client` can be shared between threads; create it once per process.
"""

from __future__ import annotations

import importlib as _importlib
import logging
import typing as _typing

from mcpsync._version import __version__  # noqa: E402

from mcpsync import types  # noqa: E402
from mcpsync.client.interceptors import OutgoingRequest  # noqa: E402
from mcpsync.client.options import DEFAULT  # noqa: E402
from mcpsync.client.retry import RetryPolicy  # noqa: E402
from mcpsync.client.subscriptions import Notification, Subscription  # noqa: E402
from mcpsync.client.client import Client, Handle, PendingCall  # noqa: E402
from mcpsync.exceptions import *  # noqa: E402,F401,F403
from mcpsync.exceptions import __all__ as _exc_all  # noqa: E402

if _typing.TYPE_CHECKING:
    from mcpsync.client.task_handle import TaskHandle
    from mcpsync.group import ClientGroup, UnknownName
    from mcpsync.llm import ProviderResponseError

__all__ = ["__version__", "Client", "ClientGroup", "Handle", "PendingCall", "TaskHandle", "Subscription",
           "Notification", "DEFAULT", "RetryPolicy", "OutgoingRequest", "types", *_exc_all, "UnknownName",
           "ProviderResponseError"]

logging.getLogger(__name__).addHandler(logging.NullHandler())


#: Imported on first use: a process with one server should not pay for the group, the LLM
#: bridge or tasks.
_LAZY = {"ClientGroup": "mcpsync.group", "UnknownName": "mcpsync.group", "ProviderResponseError": "mcpsync.llm",
         "TaskHandle": "mcpsync.client.task_handle"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(_importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mcpsync' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
