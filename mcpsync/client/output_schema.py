"""Optional validation of tool results against their ``outputSchema``, in bounded time.

Validation needs :mod:`jsonschema`; without it this is a no-op, so the core
install stays small.  The schema comes from the server, so checking it must not
let the server stall the process (docs/security.rst, "Limits on server input"):

* Regular expressions (``pattern``, ``patternProperties`` and the
  ``additionalProperties`` that depends on them) run on RE2, a linear-time
  engine, when ``google-re2`` is installed (``pip install 'mcpsync[re2]'``).
  Python's backtracking :mod:`re` is never used on a server's pattern (one
  ``^(a+)+$`` holds the GIL for seconds): without RE2, or for a pattern RE2
  cannot compile (back-references, look-arounds), that keyword is not checked
  and a warning is logged once per schema.  ``unevaluatedProperties`` in a
  schema that has ``patternProperties`` is not checked for the same reason
  (jsonschema matches those with :mod:`re`).  ``format`` is an annotation
  only (no format checker), so ``format: regex`` compiles nothing.
* A schema of more than :data:`MAX_SCHEMA_NODES` values or nested deeper than
  :data:`MAX_SCHEMA_DEPTH` is not checked (warned once).
* The work of one check is bounded: every keyword evaluated, and every member
  of the value it looks at, spends from :data:`MAX_WORK`; past it the rest of
  the result is not checked (warned once).  The call's deadline is checked
  as it goes: validation never runs past the call's ``timeout``.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import threading
from typing import Any, Callable, Iterator

from mcpsync.exceptions import ProtocolError, RequestTimeout, excerpt
from mcpsync.rpc.deadline import Deadline

__all__ = ["check_structured_content", "MAX_SCHEMA_NODES", "MAX_SCHEMA_DEPTH", "MAX_WORK"]

log = logging.getLogger(__name__)

#: The most values (objects, arrays, strings, numbers...) an outputSchema may have to be checked.
MAX_SCHEMA_NODES = 10_000
#: The deepest nesting an outputSchema may have to be checked.
MAX_SCHEMA_DEPTH = 64
#: The work one check may do: a unit per keyword evaluated and per member of its value.
MAX_WORK = 500_000

Search = Callable[[str], bool]
_state = threading.local()


class _Unchecked(Exception):
    """The check stops here: the rest is not checked (the reason is the message)."""


@functools.lru_cache(maxsize=1)
def _re2() -> Any:
    try:
        # Through importlib: google-re2 is optional and ships no type hints.
        re2 = importlib.import_module("re2")
    except ImportError:
        return None
    options = re2.Options()
    options.log_errors = False  # a pattern RE2 cannot read is reported here, not on stderr
    options.max_mem = 8 << 20
    return re2, options


@functools.lru_cache(maxsize=1024)
def _search(pattern: str) -> Search | None:
    """A linear-time ``search`` for *pattern*, or ``None`` when there is no safe engine for it."""
    engine = _re2()
    if engine is None:
        return None
    re2, options = engine
    try:
        compiled = re2.compile(pattern, options)
    except re2.error:
        return None
    return lambda text: compiled.search(text) is not None


def _spend(units: int) -> None:
    _state.work -= units
    if _state.work < 0:
        raise _Unchecked(f"checking it takes more than {MAX_WORK} steps")
    if _state.deadline is not None and _state.deadline.passed():
        raise RequestTimeout("validating structuredContent ran out of the call's time", method="tools/call")


def _searcher(pattern: Any) -> Search | None:
    search = _search(pattern) if isinstance(pattern, str) else None
    if search is None:
        _state.skipped.add(excerpt(pattern, 60))
    return search


@functools.lru_cache(maxsize=1)
def _validator_class() -> Any:
    try:
        from jsonschema.exceptions import ValidationError
        from jsonschema.validators import Draft202012Validator, extend, validator_for
    except ImportError:
        return None

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string"):
            search = _searcher(patrn)
            if search is not None and not search(instance):
                yield ValidationError(f"{excerpt(instance)} does not match {excerpt(patrn)}")

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "object"):
            for patrn, subschema in patterns.items():
                search = _searcher(patrn)
                for key, value in instance.items() if search is not None else ():
                    if search(key):  # type: ignore[misc]
                        yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    def additional(original: Any) -> Any:
        def additional_properties(validator: Any, aP: Any, instance: Any, schema: Any) -> Any:
            patterns = schema.get("patternProperties") or {}
            if not patterns or not validator.is_type(instance, "object"):
                return original(validator, aP, instance, schema)
            searches = [_searcher(patrn) for patrn in patterns]
            if None in searches:
                return ()  # which members are "additional" depends on a pattern not checked
            names = schema.get("properties", {})
            extra = [k for k in instance if k not in names and not any(s(k) for s in searches)]  # type: ignore[misc]
            stripped = {k: v for k, v in schema.items() if k != "patternProperties"}
            return original(validator, aP, {k: instance[k] for k in extra}, stripped)

        return additional_properties

    def unevaluated(original: Any) -> Any:
        def unevaluated_properties(validator: Any, uP: Any, instance: Any, schema: Any) -> Any:
            if _state.pattern_properties:
                _state.skipped.add("unevaluatedProperties")
                return ()
            return original(validator, uP, instance, schema)

        return unevaluated_properties

    def counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
        def run(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
            size = len(instance) if isinstance(instance, (dict, list)) else 0
            # uniqueItems compares pairs of unhashable members: charge it as the pairs it may try.
            _spend(1 + (size * size // 8 if keyword is unique else size))
            return keyword(validator, value, instance, schema)

        return run

    @functools.lru_cache(maxsize=None)  # one class per draft
    def build(base: Any) -> Any:
        keywords = dict(base.VALIDATORS)
        keywords["pattern"] = pattern
        if "patternProperties" in keywords:
            keywords["patternProperties"] = pattern_properties
            keywords["additionalProperties"] = additional(keywords["additionalProperties"])
        if "unevaluatedProperties" in keywords:
            keywords["unevaluatedProperties"] = unevaluated(keywords["unevaluatedProperties"])
        return extend(base, {name: counted(fn) for name, fn in keywords.items()})

    unique = Draft202012Validator.VALIDATORS["uniqueItems"]

    def for_schema(schema: Any) -> Any:
        return build(validator_for(schema, default=Draft202012Validator))

    return for_schema


def _measure(value: Any, depth: int = 0) -> tuple[int, int]:
    """``(values, depth)`` of a JSON value, stopping once either is over its limit."""
    count, deepest = 1, depth
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        if count > MAX_SCHEMA_NODES or deepest > MAX_SCHEMA_DEPTH:
            break
        n, d = _measure(child, depth + 1)
        count, deepest = count + n, max(deepest, d)
    return count, deepest


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> tuple[Any, bool, str]:
    """``(validator or None, has patternProperties, why it is not checked)`` for a schema."""
    schema = json.loads(schema_json)
    count, depth = _measure(schema)
    if count > MAX_SCHEMA_NODES or depth > MAX_SCHEMA_DEPTH:
        why = f"it has more than {MAX_SCHEMA_NODES} values or {MAX_SCHEMA_DEPTH} levels"
        return None, False, why
    cls = _validator_class()(schema)
    # Only the schema itself and the metaschemas: jsonschema's default registry would
    # GET any http(s) $ref a server puts in an outputSchema (SSRF; SEP-2106 forbids it).
    from jsonschema.validators import SPECIFICATIONS

    return cls(schema, registry=SPECIFICATIONS), '"patternProperties"' in schema_json, ""


@functools.lru_cache(maxsize=256)
def _warn_once(tool: str, schema_json: str, what: str) -> None:
    """Log *what* once per tool, schema and reason (an lru_cache hit logs nothing)."""
    log.warning("outputSchema of tool %r: %s", tool, what)


def check_structured_content(tool: str, schema: dict[str, Any], content: Any, deadline: Deadline | None = None) -> None:
    """Raise :class:`ProtocolError` if *content* does not match the tool's output schema.

    :param deadline: the call's deadline; validation
        past it raises :class:`~mcpsync.RequestTimeout`.
    """
    if _validator_class() is None:
        return
    if content is None:
        raise ProtocolError(f"tool {tool!r} declares an outputSchema but returned no structuredContent")
    from referencing.exceptions import Unresolvable  # jsonschema's own dependency

    key = json.dumps(schema, sort_keys=True)
    validator, _state.pattern_properties, why = _validator(key)
    _state.work, _state.deadline, _state.skipped = MAX_WORK, deadline, set()
    error = None
    try:
        if validator is not None:
            error = next(iter(validator.iter_errors(content)), None)
    except Unresolvable as exc:
        # A $ref outside the schema (never fetched): the content cannot be checked here,
        # which says nothing against it.
        log.debug("outputSchema of tool %r not checked: %s", tool, excerpt(str(exc)))
        return
    except (_Unchecked, RecursionError) as exc:
        why = str(exc) if isinstance(exc, _Unchecked) else "it nests too deeply"
    if why:
        _warn_once(tool, key, f"not checked: {why}")
    if _state.skipped:
        hint = "" if _re2() is not None else " (install google-re2 to check them)"
        names = ", ".join(sorted(_state.skipped)[:3])
        _warn_once(tool, key, f"{names} not checked: Python's re could stall the process on them{hint}")
    if error is not None:
        raise ProtocolError(
            f"tool {tool!r} returned structuredContent that does not match its outputSchema:"
            f" {excerpt(error.message)}"
        )
