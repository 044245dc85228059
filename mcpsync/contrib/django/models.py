"""One row per user and token-store key: the user's OAuth record for one MCP server, encrypted."""

from __future__ import annotations

from django.db import models


class McpToken(models.Model):
    """An encrypted token record (see :class:`~mcpsync.contrib.django.stores.DatabaseTokenStore`)."""

    #: Whose record: the user's primary key as a string (any user model fits).
    user_key = models.CharField(max_length=150)
    #: SHA-256 of the store key (the MCP server's URL, or a login in progress).
    key_hash = models.CharField(max_length=64)
    #: The record, encrypted with ``MCP_TOKEN_KEY`` (Fernet); never readable as it is stored.
    sealed = models.TextField()
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "mcpsync_token"
        constraints = [
            models.UniqueConstraint(fields=["user_key", "key_hash"], name="mcpsync_token_user_key")
        ]

    def __str__(self) -> str:
        return f"MCP token record of user {self.user_key}"
