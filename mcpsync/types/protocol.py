"""Protocol constants, defined once: the revisions mcpsync speaks, the logging levels, and the
rule that turns a Python attribute name into its wire name.

This module imports nothing heavy (no cattrs), so the client's options, the CLI and the
in-process server engine can share it at import time.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["HANDSHAKE_VERSIONS", "LATEST_HANDSHAKE_VERSION", "LOGGING_LEVELS", "LoggingLevel", "MODERN_VERSIONS",
           "wire_name"]

#: The handshake-era revisions (``initialize``), newest first.
HANDSHAKE_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: What a handshake-era client offers first.
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[0]
#: The stateless-era revisions (``server/discover``, per-request ``_meta``), newest first.
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)

#: Severity of a log message, as in RFC 5424 (syslog).
LoggingLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
#: The logging levels, least severe first (the order ``logging/setLevel`` thresholds use).
LOGGING_LEVELS: tuple[LoggingLevel, ...] = get_args(LoggingLevel)


def wire_name(name: str) -> str:
    """Return the wire (JSON) name of a python attribute: ``mime_type`` -> ``mimeType``."""
    if name == "meta":
        return "_meta"
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)
