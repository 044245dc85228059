"""Validate JSON messages against the MCP JSON Schema of a protocol revision.

The schemas are copies of the spec's ``schema/<version>/schema.json`` under
``tests/data/spec`` (license in ``tests/data/spec/LICENSE``), so tests need
nothing outside this repository. ::

    from schema_util import validate_against
    validate_against("2025-06-18", "CallToolRequest", captured_message)
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.validators import validator_for

SPEC_DIR = Path(__file__).resolve().parent / "data" / "spec"
#: The revisions that use ``initialize`` (the "handshake era").
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: Every revision we have a schema for.
ALL_VERSIONS = (*HANDSHAKE_VERSIONS, "2026-07-28")


@functools.cache
def load_schema(version: str) -> dict[str, Any]:
    """Return the parsed ``schema.json`` of ``version``."""
    with open(SPEC_DIR / version / "schema.json", encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
    return schema


def _defs_key(version: str) -> str:
    # Draft-07 schemas (up to 2025-06-18) say "definitions"; 2020-12 ones "$defs".
    return "$defs" if "$defs" in load_schema(version) else "definitions"


def definitions(version: str) -> frozenset[str]:
    """Return the names of the definitions in ``version``'s schema."""
    return frozenset(load_schema(version)[_defs_key(version)])


@functools.cache
def _root_validator(version: str) -> Any:
    root = load_schema(version)
    cls = validator_for(root)
    cls.check_schema(root)
    # One validator per revision: its reference resolution is built (and
    # cached) once, which is what makes repeated validation cheap.
    return cls(root)


def _validator(version: str, definition: str) -> Any:
    key = _defs_key(version)
    if definition not in load_schema(version)[key]:
        raise KeyError(f"{version} has no definition {definition!r}")
    # Validate against the definition itself, resolving nested $refs in the
    # revision's document.
    root = _root_validator(version)
    return root.evolve(schema=root.schema[key][definition])


def validate_against(version: str, definition: str, instance: Any) -> None:
    """Validate ``instance`` against ``definition`` of ``version``'s schema.

    :raises KeyError: if the revision has no such definition.
    :raises jsonschema.ValidationError: if the instance does not validate; the
        message names every error found.
    """
    validator = _validator(version, definition)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [
            f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors
        ]
        raise jsonschema.ValidationError(
            f"not a valid {definition} for {version}:\n" + "\n".join(lines)
        )
