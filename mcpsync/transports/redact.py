"""Masking secrets in URLs and diagnostic text, for every network transport's logs and errors.

A module of its own so that the HTTP and WebSocket transports share it without
importing each other.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["redact_text", "redact_url"]

_SECRETS = re.compile(
    r"(?i)(bearer\s+|basic\s+|"
    r"[\"']?(?:access_token|refresh_token|id_token|token|password|secret|client_secret|api[_-]?key|"
    r"authorization|session_id|sessionid|mcp-session-id)[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic)\s+)?)"
    r"[^\s\"'&,;<>]+"
)
_QUERY = re.compile(r"((?:https?://|url: )[^\s'\"?]*)\?[^\s'\")]*")


def redact_url(url: str) -> str:
    """*url* without credentials, query string or fragment: safe for logs and errors."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    suffix = "?[redacted]" if parts.query else ""
    return f"{parts.scheme}://{host}{parts.path}{suffix}"


def redact_text(text: str) -> str:
    """Mask tokens, passwords and query strings in untrusted or diagnostic text."""
    text = _SECRETS.sub(lambda m: m.group(1) + "[redacted]", text)
    return _QUERY.sub(lambda m: m.group(1) + "?[redacted]", text)
