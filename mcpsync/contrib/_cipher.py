"""Token records encrypted at rest (Fernet: AES-128-CBC with HMAC-SHA256, from ``cryptography``).

A web app keeps its users' OAuth tokens in its database or cache, where
backups, replicas and admins see them; :class:`RecordCipher` makes what is
stored there useless without the key from the settings.  Several keys may be
given (newest first) to rotate: every key decrypts, the first encrypts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..auth import TokenStoreError
from ..config import ConfigError

__all__ = ["RecordCipher", "generate_key"]


def _fernet() -> Any:
    try:
        from cryptography import fernet
    except ImportError:
        raise ConfigError(
            "encrypted token stores need the cryptography package (in mcpsync's django and flask extras)"
        ) from None
    return fernet


def generate_key() -> str:
    """A new random key for ``MCP_TOKEN_KEY`` (url-safe base64, 32 bytes).

    From a shell: ``python -c 'from mcpsync.contrib import generate_key; print(generate_key())'``.
    """
    return str(_fernet().Fernet.generate_key().decode("ascii"))


class RecordCipher:
    """Encrypts and decrypts token records with the key(s) from the settings.

    :param keys: one Fernet key, or several (newest first) while rotating.
    :raises ConfigError: no key, or a key that is not a Fernet key (the
        message never shows the key).
    """

    def __init__(self, keys: str | bytes | Sequence[str | bytes] | None) -> None:
        fernet = _fernet()
        if keys is None or keys == "" or keys == []:
            raise ConfigError(
                "MCP_TOKEN_KEY is not set: the token store encrypts tokens with it; make one with "
                "python -c 'from mcpsync.contrib import generate_key; print(generate_key())'"
            )
        items = [keys] if isinstance(keys, (str, bytes)) else list(keys)
        try:
            self._fernet = fernet.MultiFernet([fernet.Fernet(k) for k in items])
        except (ValueError, TypeError):
            raise ConfigError(
                "MCP_TOKEN_KEY is not a valid key (32 url-safe base64-encoded bytes)"
            ) from None
        self._invalid = fernet.InvalidToken

    def encrypt(self, record: dict[str, Any]) -> str:
        """The record as an encrypted, ASCII string."""
        data = json.dumps(record, separators=(",", ":")).encode("utf-8")
        return str(self._fernet.encrypt(data).decode("ascii"))

    def decrypt(self, text: str) -> dict[str, Any]:
        """The record back.

        :raises TokenStoreError: a wrong key (rotated away?) or a damaged value.
        """
        try:
            record = json.loads(self._fernet.decrypt(text.encode("ascii")).decode("utf-8"))
        except (self._invalid, ValueError, UnicodeError):
            raise TokenStoreError(
                "a stored token record cannot be decrypted (MCP_TOKEN_KEY changed without keeping "
                "the old key?); the user has to connect the server again"
            ) from None
        if not isinstance(record, dict):
            raise TokenStoreError("a stored token record is not a JSON object")
        return record

    def __repr__(self) -> str:
        return "<RecordCipher [key redacted]>"
