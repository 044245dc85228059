"""The bases of every protocol class: the ``extra`` and ``meta`` fields, one shared ``__repr__``
and ``__eq__``.

Every protocol class keeps the wire keys it does not know in ``extra`` (keyword-only,
declared once here) and sends them back, so a newer server never breaks this client.
The classes whose wire form has ``_meta`` (results, request and notification params,
content blocks...) derive from :class:`MetaObject`, which adds the keyword-only ``meta``.

attrs would generate (and ``compile()``) ``__repr__`` and ``__eq__`` for each of the ~85
classes at import, which was most of the cost of ``import mcpsync``; these generic
versions read ``__attrs_attrs__`` instead and behave the same: the repr is attrs'
(``TextContent(text='hi', type='text', ..., extra={})``, ``...`` for a cycle), equality
needs the exact same class and equal fields, and instances stay unhashable.  Classes
use ``@attrs.define(repr=False, eq=False)``.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

__all__ = ["MetaObject", "WireObject"]

_repr_state = threading.local()
#: The inherited fields (first in attrs' order), shown after the class's own fields, in this order.
_SHOWN_LAST = {"meta": 1, "extra": 2}


@attrs.define(repr=False, eq=False)
class WireObject:
    """Shared ``extra``, ``__repr__`` and ``__eq__`` for attrs protocol classes (not a public type)."""

    #: Unknown wire keys, kept so a round trip is lossless (a field wins over a key of the same name).
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)

    def __repr__(self) -> str:
        # Per thread, like attrs: a cyclic structure prints ``...`` instead of recursing.
        active: set[int] | None = getattr(_repr_state, "active", None)
        if active is None:
            active = _repr_state.active = set()
        if id(self) in active:
            return "..."
        active.add(id(self))
        try:
            shown = sorted((a for a in self.__attrs_attrs__ if a.repr), key=lambda a: _SHOWN_LAST.get(a.name, 0))
            fields = ", ".join(f"{a.name}={getattr(self, a.name, attrs.NOTHING)!r}" for a in shown)
            return f"{self.__class__.__qualname__.rsplit('>.', 1)[-1]}({fields})"
        finally:
            active.discard(id(self))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, a.name) == getattr(other, a.name) for a in self.__attrs_attrs__ if a.eq)


# Mutable objects with value equality must not be hashable (as attrs does it).
WireObject.__hash__ = None  # type: ignore[assignment]


@attrs.define(repr=False, eq=False)
class MetaObject(WireObject):
    """A protocol object with a ``_meta`` member (not a public type)."""

    #: The ``_meta`` object, verbatim (``None``: absent).
    meta: dict[str, Any] | None = attrs.field(default=None, kw_only=True)
