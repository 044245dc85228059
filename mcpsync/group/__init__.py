"""Several MCP servers used as one: :class:`ClientGroup`.

:mod:`.group` routes names to servers and keeps each server's errors (a name no
server has is :class:`~.errors.UnknownName`);
:mod:`.members` holds one server's client, tool filter and calls in flight;
:mod:`.threads` gives the deadlines and short-lived worker threads that keep a
slow server from holding up the caller (also used by :mod:`mcpsync.llm`).

May import: client, config, types, exceptions; never the CLI, testing, llm or contrib.
"""

from __future__ import annotations

from mcpsync.group.errors import UnknownName
from mcpsync.group.group import ClientGroup

__all__ = ["ClientGroup", "UnknownName"]
