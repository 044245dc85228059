"""The one cattrs converter for every protocol type, and :func:`to_wire` / :func:`from_wire`.

How it maps: python ``snake_case`` names become ``camelCase`` on the wire
(``meta`` is ``_meta``); ``None`` optionals are left out; unknown wire keys go
to each object's ``extra`` dict and come back verbatim; unions are told apart
by a tag (``type``, ``mode``) or a key (``text``/``blob``).

Both hook factories build on cattrs' generated code
(:func:`cattrs.gen.make_dict_structure_fn`/``make_dict_unstructure_fn``), so
a class costs one generated function call plus a few dict operations.

Primitives are checked strictly: a number where a string is expected is a
:class:`~mcpsync.exceptions.ProtocolError`, not silently ``str()``-ed.

Hooks are generated lazily, on a type's first use, and nothing is generated at
import. This module imports no type module: each one registers the hooks of
its own unions when it is loaded (see :mod:`mcpsync.types`, which loads them
on first access). The converter is safe to share between threads: two threads that race
on a first use each build an identical hook and one of them is kept.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_args, get_origin, overload

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ..exceptions import ProtocolError, excerpt

__all__ = ["converter", "from_wire", "to_wire"]

T = TypeVar("T")
_Hook = Callable[[Any, Any], Any]

from mcpsync.types.protocol import wire_name

#: The converter for every type in :mod:`mcpsync.types`.
converter = cattrs.Converter(detailed_validation=False)


# --- strict primitives -------------------------------------------------------
# cattrs' defaults coerce (``str(5)``, ``int("5")``); a peer sending the wrong
# JSON type is a protocol error we want to report, not paper over.

_hook_for: Callable[[Any], _Hook] = converter.get_structure_hook


def _type_error(expected: str, value: object) -> TypeError:
    return TypeError(f"expected {expected}, got {type(value).__name__}")


def _strict(kinds: tuple[type, ...], expected: str) -> _Hook:
    """A hook passing a value of *kinds* through as it is (not copied, ints not made floats:
    ``"progress": 1`` is sent back as ``1``); a bool is a number only where ``bool`` is named."""

    def structure(value: Any, _: Any) -> Any:
        if isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool)):
            return value
        raise _type_error(expected, value)

    return structure


_STR_OR_INT = _strict((str, int), "a string or an integer")
_ANY_LIST = _strict((list,), "an array")


def _identity(value: Any) -> Any:
    return value


def _is_list(tp: Any) -> bool:
    return get_origin(tp) is list


def _list_structure_factory(tp: Any) -> _Hook:
    args = get_args(tp)
    elem = args[0] if args else Any
    if elem is Any:
        return _ANY_LIST
    hook = _hook_for(elem)

    def structure_list(value: Any, _: Any) -> list[Any]:
        # Without this check a string would be iterated into characters.
        if not isinstance(value, list):
            raise _type_error("an array", value)
        # A loop, not a comprehension: before 3.12 that is one more frame per list, and every
        # tools/call result has a list.
        out = []
        for item in value:
            out.append(hook(item, elem))
        return out

    return structure_list


# --- attrs classes -----------------------------------------------------------


def _fields(cls: type[Any]) -> tuple[bool, list[Any], dict[str, Any]]:
    """Whether *cls* keeps unknown keys in ``extra``, its other fields, and the overrides leaving
    ``extra`` out of the generated code."""
    fields = [field for field in attrs.fields(cls) if field.name != "extra"]
    has_extra = len(fields) < len(attrs.fields(cls))
    return has_extra, fields, {"extra": override(omit=True)} if has_extra else {}


def _structure_factory(cls: type[Any]) -> _Hook:
    has_extra, fields, overrides = _fields(cls)
    # init=False fields (fixed tags) are not structured but are known keys.
    known_keys = frozenset(wire_name(field.name) for field in fields)
    overrides.update({field.name: override(rename=wire_name(field.name)) for field in fields})
    generated = make_dict_structure_fn(cls, converter, **overrides)
    name = cls.__name__

    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object for {name}, got {type(data).__name__}")
        obj = generated(data, cls)
        if has_extra and not known_keys.issuperset(data):
            obj.extra = {k: v for k, v in data.items() if k not in known_keys}
        return obj

    return structure


def _unstructure_factory(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    has_extra, fields, overrides = _fields(cls)
    # Only optional (default None) fields are left out; fixed tags and lists the schema
    # requires are always sent.
    overrides.update({f.name: override(rename=wire_name(f.name), omit_if_default=f.default is None) for f in fields})
    generated = make_dict_unstructure_fn(cls, converter, _cattrs_include_init_false=True, **overrides)
    if not has_extra:
        return generated

    def unstructure(obj: Any) -> dict[str, Any]:
        data = generated(obj)
        if obj.extra:
            for key, value in obj.extra.items():
                data.setdefault(key, value)
        return data

    return unstructure


# --- unions ------------------------------------------------------------------


def register_union(union: Any, key: str = "type", *, tags: Mapping[str | None, type[Any]] | None = None,
                   fallback: type[Any] | None = None, keys: Mapping[str, type[Any]] | None = None) -> None:
    """Structure ``union`` by the member ``data[key]`` names, or by which of ``keys`` is present.

    By default each member's tag is the default of its ``key`` field (the fixed
    ``type``); ``tags[None]`` is used when the key is absent; an unknown tag
    structures into ``fallback`` or fails.
    """
    members = () if keys else get_args(union)
    table = dict(tags or {attrs.fields_dict(c)[key].default: c for c in members if c is not fallback})
    # Hooks are looked up on first use: members may contain unions that are
    # registered after this one.
    hooks: dict[type[Any], _Hook] = {}

    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, dict):
            raise _type_error("an object", data)
        if keys is not None:
            cls = next((member for name, member in keys.items() if name in data), None)
            if cls is None:
                raise ValueError(f"expected one of the keys {sorted(keys)}")
        else:
            tag = data.get(key)
            cls = table.get(tag)
            if cls is None:
                if tag is None and None not in table:
                    raise ValueError(f"missing {key!r}")
                if fallback is None or not isinstance(tag, str):
                    raise ValueError(f"unknown {key} {excerpt(tag, 60)}")
                cls = fallback
        hook = hooks.get(cls)
        if hook is None:
            hook = hooks[cls] = _hook_for(cls)
        return hook(data, cls)

    converter.register_structure_hook(union, structure)


def register_list_or(other: Any, item: Any) -> None:
    """Structure ``other | list[item]``: a JSON array as a list of *item*, anything else as *other*."""
    list_type = list[item]

    def structure(data: Any, _: Any) -> Any:
        tp = list_type if isinstance(data, list) else other
        return _hook_for(tp)(data, tp)

    converter.register_structure_hook(other | list_type, structure)


def _configure() -> None:
    none = type(None)
    for tp, hook in (
        (str, _strict((str,), "a string")),
        (int, _strict((int,), "an integer")),
        (float, _strict((int, float), "a number")),
        (bool, _strict((bool,), "a boolean")),
        # One check, not cattrs' optional hook looking the inner one up on every value.
        (str | None, _strict((str, none), "a string")),
        (int | None, _strict((int, none), "an integer")),
        (float | None, _strict((int, float, none), "a number")),
        (bool | None, _strict((bool, none), "a boolean")),
        (str | int, _STR_OR_INT),  # ``RequestId`` and ``ProgressToken``
        (str | int | None, _strict((str, int, none), "a string or an integer")),
    ):
        converter.register_structure_hook(tp, hook)
    # JSON objects we do not model (schemas, arguments, _meta) are kept as is:
    # copying them would cost time for nothing.
    objects = (dict[str, Any], dict[str, Any] | None)
    converter.register_structure_hook_func(lambda t: t in objects, _strict((dict,), "an object"))
    converter.register_unstructure_hook_func(lambda t: t in objects, _identity)
    # A predicate, not a class registration: ``Any`` is not a class before 3.11.
    converter.register_unstructure_hook_func(lambda t: t is Any, _identity)
    converter.register_structure_hook_factory(_is_list, _list_structure_factory)
    converter.register_structure_hook_factory(attrs.has, _structure_factory)
    converter.register_unstructure_hook_factory(attrs.has, _unstructure_factory)


_configure()


def to_wire(obj: Any) -> dict[str, Any]:
    """Return the JSON-ready ``dict`` for a protocol object.

    Unset optional fields are left out and ``extra`` keys are merged back in
    (a field always wins over an ``extra`` key of the same name). Plain JSON
    values (schemas, arguments, ``_meta``) are shared, not copied.
    """
    data: dict[str, Any] = converter.unstructure(obj)
    return data


@overload
def from_wire(cls: type[T], data: Any) -> T: ...


@overload
def from_wire(cls: Any, data: Any) -> Any: ...


def from_wire(cls: Any, data: Any) -> Any:
    """Build a protocol object of type ``cls`` (a class or a union alias) from JSON data.

    :raises mcpsync.ProtocolError: if ``data`` does not fit ``cls``; the
        cattrs error is chained as ``__cause__``.
    """
    try:
        return converter.structure(data, cls)
    except Exception as exc:
        name = getattr(cls, "__name__", None) or repr(cls)
        detail = excerpt(f"{type(exc).__name__}: {exc}", 200)
        raise ProtocolError(f"invalid {name} from peer ({detail}): {excerpt(data)}") from exc
