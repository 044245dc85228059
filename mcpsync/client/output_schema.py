"""Optional validation of tool results against their ``outputSchema``.

Validation needs :mod:`jsonschema`; without it this is a no-op, so the core
install stays small.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

from mcpsync.exceptions import ProtocolError, excerpt

__all__ = ["check_structured_content"]


@functools.lru_cache(maxsize=1)
def _validator_factory() -> Callable[[dict[str, Any]], Any] | None:
    try:
        import jsonschema
    except ImportError:
        return None

    def build(schema: dict[str, Any]) -> Any:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        return cls(schema)

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
    validator = _validator(json.dumps(schema, sort_keys=True))
    error = next(iter(validator.iter_errors(content)), None)
    if error is not None:
        raise ProtocolError(
            f"tool {tool!r} returned structuredContent that does not match its outputSchema:"
            f" {excerpt(error.message)}"
        )
