"""Optional validation of tool results against their ``outputSchema``.

Validation needs :mod:`jsonschema`; without it this is a no-op, so the core
install stays small.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any, Callable

from mcpsync.exceptions import ProtocolError, excerpt

__all__ = ["check_structured_content"]

log = logging.getLogger("mcpsync.client.client")


@functools.lru_cache(maxsize=1)
def _validator_factory() -> Callable[[dict[str, Any]], Any] | None:
    try:
        import jsonschema
    except ImportError:
        return None

    def build(schema: dict[str, Any]) -> Any:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        # Only the schema itself and the metaschemas: jsonschema's default registry would
        # GET any http(s) $ref a server puts in an outputSchema (SSRF; SEP-2106 forbids it).
        return cls(schema, registry=jsonschema.validators.SPECIFICATIONS)

    return build


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    factory = _validator_factory()
    return None if factory is None else factory(json.loads(schema_json))


def check_structured_content(tool: str, schema: dict[str, Any], content: Any) -> None:
    """Raise :class:`ProtocolError` if *content* does not match the tool's output schema."""
    if _validator_factory() is None:
        return
    if content is None:
        raise ProtocolError(
            f"tool {tool!r} declares an outputSchema but returned no structuredContent"
        )
    from referencing.exceptions import Unresolvable  # jsonschema's own dependency

    validator = _validator(json.dumps(schema, sort_keys=True))
    try:
        error = next(iter(validator.iter_errors(content)), None)
    except Unresolvable as exc:
        # A $ref outside the schema (never fetched): the content cannot be checked here,
        # which says nothing against it.
        log.debug("outputSchema of tool %r not checked: %s", tool, excerpt(str(exc)))
        return
    if error is not None:
        raise ProtocolError(
            f"tool {tool!r} returned structuredContent that does not match its outputSchema:"
            f" {excerpt(error.message)}"
        )
