"""The exception of :mod:`mcpsync.llm` (in the tree drawn in :mod:`mcpsync.exceptions`)."""

from __future__ import annotations

from mcpsync.exceptions import McpError

__all__ = ["ProviderResponseError"]


class ProviderResponseError(McpError, ValueError):
    """An LLM provider's response is not one :mod:`mcpsync.llm` can read."""
