"""The exception of :mod:`mcpsync.group` (in the tree drawn in :mod:`mcpsync.exceptions`)."""

from __future__ import annotations

from mcpsync.exceptions import McpError, excerpt

__all__ = ["UnknownName"]


class UnknownName(McpError, KeyError):
    """No tool, prompt, resource or server of that name: in a :class:`~mcpsync.ClientGroup`,
    or on the server the ``mcpsync`` command talks to.

    Also a ``KeyError`` (``group["nope"]``).

    :ivar kind: ``"tool"``, ``"prompt"``, ``"resource"`` or ``"server"``.
    :ivar name: the name asked for.
    """

    def __init__(self, kind: str, name: str, detail: str = "") -> None:
        super().__init__(kind, name)
        self.kind = kind
        self.name = name
        self.detail = detail

    def __str__(self) -> str:
        return f"no {self.kind} {excerpt(self.name, 120)!r}{self.detail}"
