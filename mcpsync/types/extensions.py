"""Protocol extensions (SEP-2133): identifiers, and typed access to the fields they add.

An extension is named ``{vendor-prefix}/{name}`` (``io.modelcontextprotocol/tasks``,
``com.example/audit``) and may add fields to results: top-level members (kept,
like every unknown wire key, in an object's ``extra``) or ``_meta`` entries.
:func:`result_field` and :func:`meta_field` read them, typed::

    @attrs.define
    class Audit:
        ticket: str

    audit = types.meta_field(result, "com.example/audit", Audit)   # None when absent

.. versionadded:: 0.2
"""

from __future__ import annotations

import re
from typing import Any, TypeVar, overload

from ..exceptions import ProtocolError, excerpt
from ._converter import from_wire

__all__ = ["check_extension_id", "meta_field", "result_field"]

T = TypeVar("T")

# The rules of ``_meta`` key prefixes, with the prefix mandatory: dot-separated
# labels (a letter first, a letter or digit last, hyphens inside), a slash, and
# a name that starts and ends with a letter or digit.
_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_ID = re.compile(rf"{_LABEL}(?:\.{_LABEL})*/[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def check_extension_id(identifier: str) -> str:
    """Return *identifier* if it is a valid extension identifier.

    :raises ValueError: for anything else (no vendor prefix, bad characters).
    """
    if not isinstance(identifier, str) or _ID.fullmatch(identifier) is None:
        raise ValueError(
            f"not an extension identifier: {identifier!r} (expected 'vendor.prefix/name',"
            " e.g. 'com.example/my-extension')"
        )
    return identifier


def _field(value: Any, cls: Any, where: str) -> Any:
    if value is None or cls is None:
        return value
    try:
        return from_wire(cls, value)
    except ProtocolError as exc:
        raise ProtocolError(f"invalid {where}: {excerpt(value)}") from exc


@overload
def result_field(obj: Any, name: str, cls: type[T]) -> T | None: ...


@overload
def result_field(obj: Any, name: str, cls: None = None) -> Any: ...


def result_field(obj: Any, name: str, cls: Any = None) -> Any:
    """A top-level field an extension added to *obj* (a result object), typed.

    :param name: the field's wire name, e.g. ``"taskId"``.
    :param cls: an attrs class (or any type the converter knows) to build;
        ``None`` returns the JSON value as it came.
    :returns: ``None`` when the field is absent.
    :raises mcpsync.ProtocolError: when the value does not fit *cls*.
    """
    extra = getattr(obj, "extra", None)
    value = extra.get(name) if isinstance(extra, dict) else None
    return _field(value, cls, f"result field {name!r}")


@overload
def meta_field(obj: Any, key: str, cls: type[T]) -> T | None: ...


@overload
def meta_field(obj: Any, key: str, cls: None = None) -> Any: ...


def meta_field(obj: Any, key: str, cls: Any = None) -> Any:
    """An entry an extension put in *obj*'s ``_meta``, typed (see :func:`result_field`)."""
    meta = getattr(obj, "meta", None)
    value = meta.get(key) if isinstance(meta, dict) else None
    return _field(value, cls, f"_meta entry {key!r}")
