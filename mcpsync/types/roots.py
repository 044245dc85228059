"""Roots: the directories or files a server may work in (``roots/list``).

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any

import attrs

from ._base import WireObject

__all__ = ["ListRootsResult", "Root"]


@attrs.define(repr=False, eq=False)
class Root(WireObject):
    """A directory or file the server may work in. ``Root("file:///home/me/project")``."""

    #: A ``file://`` URI.
    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class ListRootsResult(WireObject):
    """The client's answer to ``roots/list``."""

    roots: list[Root] = attrs.field(factory=list)
    meta: dict[str, Any] | None = None
