"""Authorization errors.  Every one derives from :class:`mcpsync.exceptions.AuthError`.

Messages never carry a secret: no token, code, verifier, state or client
secret is ever formatted into them (RELIABILITY F7).  Server-supplied text
(``error_description``) is redacted and truncated before it is shown.
"""

from __future__ import annotations

from ..exceptions import AuthError

__all__ = ["AuthError", "AuthorizationRequired", "CallbackError", "DPoPError", "DPoPNonceError",
    "DiscoveryError", "InsecureTokenStoreError", "IssuerMismatchError", "LoginCancelled", "LoginTimeout",
    "PKCENotSupportedError", "RegistrationError", "ResourceMismatchError", "SSRFBlockedError",
    "StateMismatchError", "TokenRequestError", "TokenStoreError", "UnboundServerError"]


class AuthorizationRequired(AuthError):
    """A user has to log in; send their browser to :attr:`url`.

    Raised when ``OAuth(login=None)`` (the web-app flow) meets a server that
    needs a new authorization.  After the user comes back, call
    :meth:`mcpsync.auth.OAuth.complete` with the callback URL.
    """

    def __init__(self, url: str) -> None:
        super().__init__("authorization required: send the user to the authorization URL (.url)")
        #: The authorization URL (it contains only public values: state and
        #: the PKCE *challenge*, never the verifier).
        self.url = url


class LoginTimeout(AuthError, TimeoutError):
    """The user did not finish logging in within the login timeout."""


class LoginCancelled(AuthError):
    """The login was abandoned (the loopback receiver was closed)."""


class TokenStoreError(AuthError):
    """A token store cannot load or save credentials (the message says how to fix it)."""


class InsecureTokenStoreError(TokenStoreError):
    """The keyring backend would not keep secrets safely (fail, null or plaintext backend)."""


class DiscoveryError(AuthError):
    """Protected-resource or authorization-server metadata is missing or invalid."""


class ResourceMismatchError(DiscoveryError):
    """The protected-resource metadata names another resource than the server we talk to."""


class IssuerMismatchError(AuthError):
    """An ``issuer`` (RFC 8414 §3.3) or callback ``iss`` (RFC 9207) is not the expected one.

    Also raised, before anything is sent, when metadata names another authorization
    server than the one a pre-registered ``client_id`` belongs to.
    """


class UnboundServerError(AuthError):
    """A server that an :class:`~mcpsync.auth.OAuth` bound to another one (``server_url=`` or
    ``key=``) asked for authorization; its tokens are never sent there.  Give each server an
    ``OAuth`` of its own, or one without ``server_url=``/``key=`` (a binding per server).
    """


class PKCENotSupportedError(DiscoveryError):
    """The authorization server does not advertise PKCE ``S256``; we refuse to proceed."""


class SSRFBlockedError(DiscoveryError):
    """A server-supplied URL is not allowed (scheme, or a private/loopback/link-local address)."""


class RegistrationError(AuthError):
    """No client registration could be obtained (none pre-registered, no CIMD, no DCR)."""


class TokenRequestError(AuthError):
    """The token endpoint refused a request.

    :ivar error: the OAuth ``error`` code (``"invalid_grant"``, ...) or ``None``.
    :ivar status: the HTTP status.
    """

    def __init__(self, message: str, *, error: str | None = None, status: int = 0) -> None:
        super().__init__(message)
        self.error = error
        self.status = status


class StateMismatchError(AuthError):
    """A callback's ``state`` does not match a login in progress (possible CSRF)."""


class CallbackError(AuthError):
    """The authorization server redirected back with an error (``access_denied``, ...).

    :ivar error: the OAuth ``error`` code.
    """

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


class DPoPError(AuthError):
    """DPoP (RFC 9449) cannot be used: no signing library, no common algorithm or a damaged key."""


class DPoPNonceError(DPoPError):
    """A server asked for a new DPoP nonce again right after getting one (a nonce loop).

    RFC 9449 §8 and §9 allow one retry with the nonce the server supplied; a
    second ``use_dpop_nonce`` answer is reported instead of retried forever.
    """
