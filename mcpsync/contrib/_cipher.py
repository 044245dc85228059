"""Token records encrypted at rest (Fernet: AES-128-CBC with HMAC-SHA256, from ``cryptography``).

A web app keeps its users' OAuth tokens in its database or cache, where
backups, replicas and admins see them; :class:`RecordCipher` makes what is
stored there useless without the key from the settings.  Several keys may be
given (newest first) to rotate: every key decrypts, the first encrypts.

Each sealed record names the row it was written for (the user and the store key, as a
hash inside the encrypted text): someone who can write the database but has no key
cannot make another user's tokens theirs by copying sealed values between rows, since a
value read from another row than its own is refused.  Records sealed by versions before
this binding have no such name: they are still read, and bound the next time they are
saved (a login or a token refresh).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Any

from ..auth import TokenStoreError
from ..config import ConfigError

_ROW = "mcpsync_row"


def row_name(user: str, key: str) -> str:
    """The name a store seals a record of *user* under store key *key* with."""
    return f"{user}\0{key}"


def digest(text: str) -> str:
    """SHA-256 of *text*, in hex: how a row names its user and key without keeping them."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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

    def encrypt(self, record: dict[str, Any], row: str) -> str:
        """The record as an encrypted, ASCII string, bound to *row* (who and what it is for)."""
        data = json.dumps({_ROW: digest(row), "record": record}, separators=(",", ":")).encode("utf-8")
        return str(self._fernet.encrypt(data).decode("ascii"))

    def decrypt(self, text: str, row: str) -> dict[str, Any]:
        """The record back, if it was sealed for *row*.

        :raises TokenStoreError: a wrong key (rotated away?), a damaged value, or a value
            sealed for another row (copied or swapped in the database).
        """
        try:
            sealed = json.loads(self._fernet.decrypt(text.encode("ascii")).decode("utf-8"))
        except (self._invalid, ValueError, UnicodeError):
            raise TokenStoreError(
                "a stored token record cannot be decrypted (MCP_TOKEN_KEY changed without keeping "
                "the old key?); the user has to connect the server again"
            ) from None
        if isinstance(sealed, dict) and _ROW in sealed:
            if not hmac.compare_digest(str(sealed[_ROW]), digest(row)):
                raise TokenStoreError(
                    "a stored token record was sealed for another user or server (copied or swapped "
                    "in the database?); it is not used: the user has to connect the server again"
                )
            sealed = sealed.get("record")
        if not isinstance(sealed, dict):
            raise TokenStoreError("a stored token record is not a JSON object")
        return sealed

    def __repr__(self) -> str:
        return "<RecordCipher [key redacted]>"
