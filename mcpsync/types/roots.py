"""Roots: the directories or files a server may work in (``roots/list``).

.. versionadded:: 0.1
"""

from __future__ import annotations

import attrs

from ._base import MetaObject

__all__ = ["ListRootsResult", "Root"]


@attrs.define(repr=False, eq=False)
class Root(MetaObject):
    """A directory or file the server may work in. ``Root("file:///home/me/project")``."""

    #: A ``file://`` URI.
    uri: str
    name: str | None = None


@attrs.define(repr=False, eq=False)
class ListRootsResult(MetaObject):
    """The client's answer to ``roots/list``."""

    roots: list[Root] = attrs.field(factory=list)
