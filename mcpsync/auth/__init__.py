"""OAuth 2.1 authorization for MCP servers over HTTP (see ``docs/auth.rst``).

``keyring`` is imported only when a :class:`KeyringTokenStore` is used, so
stdio-only users never pay for it.

May import: :mod:`mcpsync.exceptions` and :mod:`mcpsync.types` only; the transports use
it through ``requests``' auth hooks, and it never imports a transport or the client.
"""

from __future__ import annotations

from . import _errors
from ._assertions import IdJagAssertion, WorkloadIdentityAssertion
from ._errors import *  # noqa: F403 - every error, as listed in _errors.__all__
from ._loopback import LoopbackLogin
from ._oauth import BearerToken, OAuth
from ._stores import FileTokenStore, KeyringTokenStore, MemoryTokenStore, TokenStore

__all__ = ["BearerToken", "FileTokenStore", "IdJagAssertion", "KeyringTokenStore", "LoopbackLogin",
    "MemoryTokenStore", "OAuth", "TokenStore", "WorkloadIdentityAssertion"]
__all__ += _errors.__all__
