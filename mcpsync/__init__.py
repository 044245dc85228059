"""mcpsync: a synchronous, threaded client for the Model Context Protocol.

::

    import mcpsync

    with mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"]) as client:
        print(client.call_tool("add", {"a": 1, "b": 2}).text)

A :class:`Client` can be shared between threads; create it once per process.
"""

from __future__ import annotations

import logging

__version__ = "0.1.0"

from . import types  # noqa: E402
from ._options import DEFAULT  # noqa: E402
from ._subscriptions import Notification, Subscription  # noqa: E402
from .client import Client, Handle, PendingCall, TaskHandle  # noqa: E402
from .exceptions import *  # noqa: E402,F401,F403
from .exceptions import __all__ as _exc_all  # noqa: E402

__all__ = [
    "__version__",
    "Client",
    "Handle",
    "PendingCall",
    "TaskHandle",
    "Subscription",
    "Notification",
    "DEFAULT",
    "types",
    *_exc_all,
]

logging.getLogger(__name__).addHandler(logging.NullHandler())
