"""PKCE (RFC 7636) and ``state`` values, from :mod:`secrets` only."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = ["new_state", "new_verifier", "s256_challenge", "same_secret"]


def new_verifier() -> str:
    """A 64-character code verifier (RFC 7636 §4.1 allows 43-128 unreserved characters)."""
    # 48 random bytes -> 64 base64url characters, 384 bits of entropy.
    return secrets.token_urlsafe(48)


def s256_challenge(verifier: str) -> str:
    """``BASE64URL(SHA256(verifier))`` without padding (RFC 7636 §4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def new_state() -> str:
    """An unguessable ``state`` value (256 bits)."""
    return secrets.token_urlsafe(32)


def same_secret(a: str | None, b: str | None) -> bool:
    """Constant-time comparison; ``None`` never matches."""
    if a is None or b is None:
        return False
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))
