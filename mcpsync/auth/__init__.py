"""OAuth 2.1 authorization for MCP servers over HTTP (see ``docs/auth.rst``).

``keyring`` is imported only when a :class:`KeyringTokenStore` is used, so
stdio-only users never pay for it.

May import: :mod:`mcpsync.exceptions` and :mod:`mcpsync.types` only; the transports use
it through ``requests``' auth hooks, and it never imports a transport or the client.
"""

from __future__ import annotations

from ._enterprise import IdJagAssertion
from ._errors import (
    AuthError,
    AuthorizationRequired,
    CallbackError,
    DiscoveryError,
    DPoPError,
    DPoPNonceError,
    InsecureTokenStoreError,
    IssuerMismatchError,
    LoginCancelled,
    LoginTimeout,
    PKCENotSupportedError,
    RegistrationError,
    ResourceMismatchError,
    SSRFBlockedError,
    StateMismatchError,
    TokenRequestError,
    TokenStoreError,
    UnboundServerError,
)
from ._loopback import LoopbackLogin
from ._oauth import BearerToken, OAuth
from ._stores import FileTokenStore, KeyringTokenStore, MemoryTokenStore, TokenStore
from ._workload import WorkloadIdentityAssertion

__all__ = [
    "AuthError",
    "AuthorizationRequired",
    "BearerToken",
    "CallbackError",
    "DPoPError",
    "DPoPNonceError",
    "DiscoveryError",
    "FileTokenStore",
    "IdJagAssertion",
    "InsecureTokenStoreError",
    "IssuerMismatchError",
    "KeyringTokenStore",
    "LoginCancelled",
    "LoginTimeout",
    "LoopbackLogin",
    "MemoryTokenStore",
    "OAuth",
    "PKCENotSupportedError",
    "RegistrationError",
    "ResourceMismatchError",
    "SSRFBlockedError",
    "StateMismatchError",
    "TokenRequestError",
    "TokenStore",
    "TokenStoreError",
    "UnboundServerError",
    "WorkloadIdentityAssertion",
]
