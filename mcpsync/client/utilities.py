"""The protocol's utilities: completion, the server's log level, ping, roots changed
(functions over :class:`~.core.Core`, the same in both eras)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpsync import types
from mcpsync.client.core import Core, require
from mcpsync.client.options import DEFAULT, TimeoutArg

__all__ = ["complete", "notify_roots_changed", "ping", "set_logging_level"]


def complete(client: Core, ref: types.PromptReference | types.ResourceTemplateReference, argument_name: str,
             argument_value: str, *, context: Mapping[str, str] | None = None,
             timeout: TimeoutArg = DEFAULT) -> types.Completion:
    """Ask the server to complete an argument of a prompt or resource template."""
    params: dict[str, Any] = {"ref": types.to_wire(ref), "argument": {"name": argument_name, "value": argument_value}}
    if context:
        params["context"] = {"arguments": dict(context)}
    raw = client._call("completion/complete", params, client._options.deadline(timeout), capability="completions", rounds=False)
    return types.from_wire(types.CompleteResult, raw).completion


def set_logging_level(client: Core, level: types.LoggingLevel, *, timeout: TimeoutArg = DEFAULT) -> None:
    """Ask the server to send log messages at *level* and above.

    Modern servers take the level with every request; this sets it for all requests
    from now on.
    """
    deadline = client._options.deadline(timeout)
    conn = client._connection(deadline)
    if conn.era == "modern":
        require(conn.capabilities, "logging", "logging/setLevel")
        conn.log_level = level
        conn.set_modern_meta()
        return
    client._call("logging/setLevel", {"level": level}, deadline, capability="logging", rounds=False)


def ping(client: Core, *, timeout: TimeoutArg = DEFAULT) -> None:
    """Check that the server answers (``server/discover`` on a modern server)."""
    deadline = client._options.deadline(timeout)
    legacy = client._connection(deadline).era == "legacy"
    client._call("ping" if legacy else "server/discover", None, deadline, rounds=False)


def notify_roots_changed(client: Core) -> None:
    """Tell the server the roots changed (modern servers ask for them each time)."""
    if client._connection().era == "legacy":
        client.notify("notifications/roots/list_changed")
