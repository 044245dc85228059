"""The base of every protocol class: one shared ``__repr__`` and ``__eq__``.

attrs would generate (and ``compile()``) both for each of the ~85 classes at
import, which was most of the cost of ``import mcpsync``; these generic
versions read ``__attrs_attrs__`` instead and behave the same: the repr is
attrs' (``TextContent(text='hi', type='text', ...)``, ``...`` for a cycle),
equality needs the exact same class and equal fields, and instances stay
unhashable.  Classes use ``@attrs.define(repr=False, eq=False)``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

__all__ = ["WireObject"]

_repr_state = threading.local()


class WireObject:
    """Shared ``__repr__``/``__eq__`` for attrs protocol classes (not a public type)."""

    __slots__ = ()
    if TYPE_CHECKING:
        # For type checkers.  It must still evaluate at runtime: cattrs resolves
        # every annotation in the MRO, and tools such as Sphinx's autodoc import
        # modules with TYPE_CHECKING set (attrs.Attribute is not subscriptable).
        __attrs_attrs__: ClassVar[tuple[Any, ...]]

    def __repr__(self) -> str:
        # Per thread, like attrs: a cyclic structure prints ``...`` instead of recursing.
        active: set[int] | None = getattr(_repr_state, "active", None)
        if active is None:
            active = _repr_state.active = set()
        if id(self) in active:
            return "..."
        active.add(id(self))
        try:
            fields = ", ".join(
                f"{a.name}={getattr(self, a.name, attrs.NOTHING)!r}"
                for a in self.__attrs_attrs__
                if a.repr
            )
            return f"{self.__class__.__qualname__.rsplit('>.', 1)[-1]}({fields})"
        finally:
            active.discard(id(self))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(
            getattr(self, a.name) == getattr(other, a.name) for a in self.__attrs_attrs__ if a.eq
        )


# Mutable objects with value equality must not be hashable (as attrs does it).
WireObject.__hash__ = None  # type: ignore[assignment]
