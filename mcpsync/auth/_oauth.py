"""``OAuth`` and ``BearerToken``: ``requests`` auth objects for MCP servers.

``OAuth`` follows the shape of ``requests.auth.HTTPDigestAuth``: ``__call__``
adds the bearer token and registers a response hook; the hook answers a 401
(or a 403 ``insufficient_scope``) by authorizing and re-sending the request
once per authorization, at most ``max_auth_attempts`` times.  Unlike digest
auth, the token is shared: refresh and login are single-flight under one lock
for all threads, and the store's lock extends that to other processes.

With a DPoP-bound token (RFC 9449) every request also gets a fresh proof in
its ``DPoP`` header and ``Authorization: DPoP <token>``; a ``use_dpop_nonce``
challenge is answered by re-sending once with the server's nonce.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from requests.auth import AuthBase

from . import _deadline
from ._discovery import canonical_resource, parse_www_authenticate, wants_dpop_nonce
from ._dpop import proof_nonce
from ._errors import AuthError, DPoPNonceError
from ._flow import Authorizer, expiring
from ._loopback import LoopbackLogin
from ._scopes import scope_set as _scope_set
from ._stores import MemoryTokenStore, TokenStore

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["BearerToken", "OAuth"]

log = logging.getLogger("mcpsync.auth")

_DEFAULT: Any = object()


class BearerToken(AuthBase):
    """A fixed bearer token (an API key issued out of band)."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self._token}"
        return r

    def __repr__(self) -> str:
        return "<BearerToken [redacted]>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BearerToken) and other._token == self._token

    __hash__ = None  # type: ignore[assignment]


class OAuth(AuthBase):
    """OAuth 2.1 for MCP servers, as the MCP authorization spec describes it.

    ``Client.http(url, auth=OAuth(...))``: on a 401 the server's metadata is
    discovered, a client registered (or the pre-registered one used), the
    user logged in and the request retried; tokens are refreshed before they
    expire and kept in *store*.

    :param store: a :class:`~mcpsync.auth.TokenStore`; default
        :class:`~mcpsync.auth.MemoryTokenStore` (nothing survives the process).
    :param login: a :class:`~mcpsync.auth.LoopbackLogin` (the default), or
        ``None`` for the web-app flow: a request that needs a login raises
        :class:`~mcpsync.auth.AuthorizationRequired`; use :meth:`begin` and
        :meth:`complete` with *redirect_uri*.
    :param client_name: the name shown to the user at registration.
    :param scopes: scopes to request in addition to those the server asks for.
    :param client_id: a pre-registered client (skips registration);
        *client_secret* for a confidential one.
    :param client_metadata_url: an https URL of this client's metadata
        document, used as ``client_id`` when the server supports it.
    :param redirect_uri: the web app's own callback URL (``login=None``).
    :param grant_type: ``"authorization_code"`` (default),
        ``"client_credentials"`` (headless services; needs *client_id* and a
        *client_secret* or a *private_key*) or ``"jwt_bearer"`` (enterprise-managed
        authorization: *assertion* gives the grant, e.g. an
        :class:`~mcpsync.auth.IdJagAssertion`).
    :param assertion: ``fn(issuer, resource, scope) -> str``, the RFC 7523
        assertion for ``grant_type="jwt_bearer"``.
    :param private_key: a PEM private key for ``private_key_jwt`` client
        authentication (needs PyJWT with cryptography).
    :param server_url: the MCP server URL; default: the first request's URL.
    :param key: the store key; default: the server's canonical URL.  Use one
        key per user in a multi-user web app.
    :param session: a ``requests.Session`` for the OAuth requests (proxies,
        TLS).  Never the MCP transport's session, so its headers stay there.
    :param max_auth_attempts: authorizations per request before giving up.
    :param dpop: bind tokens to a key this client holds (DPoP, RFC 9449;
        needs ``pip install 'mcpsync[dpop]'``).  ``None`` (default): when the
        authorization server offers ES256 DPoP and the package is installed;
        ``True``: always, else :class:`~mcpsync.auth.DPoPError`; ``False``:
        bearer tokens only.  The key is kept in *store* beside the tokens.
    """

    def __init__(
        self,
        *,
        store: TokenStore | None = None,
        login: LoopbackLogin | None = _DEFAULT,
        client_name: str = "mcpsync",
        scopes: Iterable[str] | str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        client_metadata_url: str | None = None,
        redirect_uri: str | None = None,
        grant_type: str = "authorization_code",
        private_key: Any = None,
        signing_algorithm: str | None = None,
        server_url: str | None = None,
        key: str | None = None,
        session: requests.Session | None = None,
        max_auth_attempts: int = 3,
        refresh_margin: float = 30.0,
        resolve_hosts: bool = True,
        assertion: Callable[[str, str, str | None], str] | None = None,
        dpop: bool | None = None,
    ) -> None:
        if grant_type not in ("authorization_code", "client_credentials", "jwt_bearer"):
            raise ValueError(
                "grant_type must be 'authorization_code', 'client_credentials' or 'jwt_bearer'"
            )
        if grant_type != "authorization_code" and not client_id:
            raise ValueError(f"grant_type={grant_type!r} needs client_id=")
        if grant_type == "jwt_bearer" and assertion is None:
            raise ValueError(
                "grant_type='jwt_bearer' needs assertion= (e.g. an IdJagAssertion)"
            )
        self.store = store if store is not None else MemoryTokenStore()
        self.login = (
            LoopbackLogin()
            if login is _DEFAULT and redirect_uri is None
            else (None if login is _DEFAULT else login)
        )
        self.client_name = client_name
        self.scopes = _scope_set(scopes)
        self.client_id = client_id
        self._client_secret = client_secret
        self.client_metadata_url = client_metadata_url
        self.redirect_uri = redirect_uri
        self.grant_type = grant_type
        self._private_key = private_key
        self.signing_algorithm = signing_algorithm
        self.max_auth_attempts = max_auth_attempts
        self.refresh_margin = refresh_margin
        self._resolve_hosts = resolve_hosts
        self._session = session
        self._assertion = assertion
        self.dpop = dpop
        self._key = key
        self._lock = threading.RLock()
        self._flow: Authorizer | None = None
        self._tokens: dict[str, Any] | None = None
        self._server_url: str | None = None
        if server_url is not None:
            self._bind(server_url)

    def __repr__(self) -> str:
        return (
            f"<OAuth server={self._server_url!r} client_name={self.client_name!r} "
            f"grant_type={self.grant_type!r} store={self.store!r}>"
        )

    # -- wiring ----------------------------------------------------------------------------

    def _bind(self, url: str) -> Authorizer:
        flow = self._flow
        if flow is not None:
            # Bound once, read without the lock: a refresh or a login holds it for long.
            return flow
        with self._locked():
            if self._flow is not None:
                return self._flow
            import requests

            self._server_url = canonical_resource(url)
            self._flow = Authorizer(
                store=self.store,
                key=self._key or self._server_url,
                server_url=url,
                session=self._session or requests.Session(),
                login=self.login,
                client_name=self.client_name,
                scopes=self.scopes,
                client_id=self.client_id,
                client_secret=self._client_secret,
                client_metadata_url=self.client_metadata_url,
                redirect_uri=self.redirect_uri,
                grant_type=self.grant_type,
                private_key=self._private_key,
                signing_algorithm=self.signing_algorithm,
                resolve_hosts=self._resolve_hosts,
                assertion=self._assertion,
                dpop=self.dpop,
            )
            return self._flow

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the single-flight lock, waiting at most what is left of the request's deadline."""
        _deadline.acquire(self._lock, "waiting for another thread's token refresh")
        try:
            yield
        finally:
            self._lock.release()

    def _current_tokens(self, flow: Authorizer) -> dict[str, Any] | None:
        """Usable tokens (refreshed first when about to expire), or ``None``."""
        with self._locked():
            if self._tokens is None:
                self._tokens = flow.load().get("tokens")
            tokens = self._tokens
            if not tokens:
                return None
            if expiring(tokens, self.refresh_margin):
                self._tokens = tokens = flow.refresh(tokens.get("access_token"))
            return tokens if tokens and tokens.get("access_token") else None

    @staticmethod
    def _present(
        flow: Authorizer, r: requests.PreparedRequest, tokens: dict[str, Any]
    ) -> None:
        """Put *tokens* on *r*: ``Bearer``, or ``DPoP`` with a fresh proof (RFC 9449 §7.1)."""
        token = str(tokens["access_token"])
        key = flow.tokens_key(tokens)
        if key is None:
            r.headers["Authorization"] = f"Bearer {token}"
            r.headers.pop("DPoP", None)
            return
        url = str(r.url)
        r.headers["Authorization"] = f"DPoP {token}"
        r.headers["DPoP"] = key.proof(
            str(r.method or "GET"), url, nonce=flow.nonces.get(url), access_token=token
        )

    # -- requests hooks ---------------------------------------------------------------------

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        flow = self._bind(self._server_url or str(r.url))
        with _deadline.within(_deadline.of(r)):
            tokens = self._current_tokens(flow)
        if tokens is not None:
            self._present(flow, r, tokens)
        r.register_hook("response", self._handle_response)  # type: ignore[no-untyped-call]
        return r

    def _resend(
        self,
        flow: Authorizer,
        refused: requests.Response,
        tokens: dict[str, Any],
        kwargs: dict[str, Any],
    ) -> requests.Response:
        """Send *refused*'s request again with *tokens* (and a new proof)."""
        # The body of the refused response is small; read it so the connection is reused.
        refused.content  # noqa: B018
        refused.close()
        prep = refused.request.copy()
        deadline = _deadline.of(refused.request)
        if deadline is not None:
            # The re-send is the same call: same deadline, and only what is left of it to wait.
            setattr(prep, _deadline.ATTRIBUTE, deadline)
            given = kwargs.get("timeout")
            parts = given if isinstance(given, tuple) else (given, given)
            connect, read = (float("inf") if part is None else float(part) for part in parts)
            kwargs = {**kwargs, "timeout": _deadline.bounded((connect, read), "re-sending the request")}
        self._present(flow, prep, tokens)
        assert refused.connection is not None
        retried: requests.Response = refused.connection.send(prep, **kwargs)
        retried.history.append(refused)
        retried.request = prep
        return retried

    def _handle_response(
        self, response: requests.Response, **kwargs: Any
    ) -> requests.Response:
        with _deadline.within(_deadline.of(response.request)):
            return self._answer(response, kwargs)

    def _answer(
        self, response: requests.Response, kwargs: dict[str, Any]
    ) -> requests.Response:
        """The response hook's work: answer 401s (and 403 step-ups), within the request's deadline."""
        flow = self._bind(self._server_url or str(response.url))
        current = response
        attempts = 0
        after_nonce = False  # *current* answers a re-send made only to add a nonce
        try:
            while True:
                status = current.status_code
                header = current.headers.get("WWW-Authenticate")
                nonce = flow.nonces.update(
                    str(current.url), current.headers.get("DPoP-Nonce")
                )
                proof = current.request.headers.get("DPoP")
                if status == 401 and isinstance(proof, str) and wants_dpop_nonce(header):
                    # RFC 9449 §9: one re-send with the server's nonce; a second demand in a
                    # row is a loop (each re-send alternates with an authorization, so the
                    # number of sends stays bounded by max_auth_attempts).
                    if after_nonce or nonce is None or nonce == proof_nonce(proof):
                        raise DPoPNonceError(
                            "the MCP server asked for a new DPoP nonce again"
                            if after_nonce
                            else "the MCP server asked for a DPoP nonce but sent none (or the same)"
                        )
                    with self._locked():
                        tokens = self._tokens
                    if tokens and tokens.get("access_token"):
                        current = self._resend(flow, current, tokens, kwargs)
                        after_nonce = True
                        continue
                after_nonce = False
                challenge = parse_www_authenticate(header)
                if status != 401 and not (
                    status == 403 and challenge.get("error") == "insufficient_scope"
                ):
                    return current
                if attempts >= self.max_auth_attempts:
                    return current
                attempts += 1
                sent = current.request.headers.get("Authorization")
                tokens = self._reauthorize(
                    status, challenge, sent if isinstance(sent, str) else None
                )
                if tokens is None:
                    return current
                current = self._resend(flow, current, tokens, kwargs)
        except BaseException:
            current.close()  # refused, and nobody else will read it: free its connection
            raise

    def _reauthorize(
        self, status: int, challenge: dict[str, str], sent: str | None
    ) -> dict[str, Any] | None:
        """Tokens to retry with, or ``None`` to give the refusal to the caller."""
        flow = self._bind(self._server_url or "")
        sent_token = sent.split(" ", 1)[-1] if sent else None
        with self._locked():
            tokens = flow.load().get("tokens") or self._tokens
            current = tokens.get("access_token") if tokens else None
            if (
                status == 401
                and tokens
                and current
                and sent_token != current
                and not expiring(tokens)
            ):
                self._tokens = tokens
                return tokens  # another thread (or process) got a new token meanwhile
            granted = _scope_set((tokens or {}).get("scope")) if sent else set()
            if status == 401 and sent and tokens and tokens.get("refresh_token"):
                refreshed = flow.refresh(current)
                if refreshed:
                    self._tokens = refreshed
                    return refreshed
            if status == 403:
                required = _scope_set(challenge.get("scope"))
                if required and required <= granted:
                    # The server refuses scopes we were already granted: asking again cannot help.
                    log.warning(
                        "the server still wants scopes it was granted; not authorizing again"
                    )
                    return None
            log.info("authorization needed for %s (HTTP %s)", self._server_url, status)
            self._tokens = flow.authorize(challenge, granted)
            return self._tokens

    # -- explicit flows -----------------------------------------------------------------------

    def login_now(self, server_url: str | None = None) -> None:
        """Log in now (e.g. from a ``login`` command) instead of on the first 401."""
        flow = self._bind(server_url or self._server_url or "")
        with self._lock:
            self._tokens = flow.authorize({}, set())

    def begin(self, server_url: str | None = None) -> str:
        """Web-app flow, step 1: the authorization URL to redirect the user's browser to.

        The login in progress (PKCE verifier, state) is kept in the store, so
        :meth:`complete` may run in another worker process sharing the store.
        """
        url = server_url or self._server_url
        if url is None:
            raise ValueError("begin() needs the MCP server URL")
        return self._bind(url).begin()

    def complete(self, callback_url: str) -> None:
        """Web-app flow, step 2: in the callback view, with the full callback URL.

        Checks ``state`` and ``iss``, exchanges the code and stores the tokens.

        :raises mcpsync.auth.StateMismatchError: unknown, replayed or expired ``state``.
        """
        if self._flow is None:
            raise AuthError(
                "complete() before begin(): pass server_url= to OAuth or call begin()"
            )
        with self._lock:
            self._tokens = self._flow.complete(callback_url)

    def logout(self) -> None:
        """Forget this server's tokens and registration in the store."""
        with self._lock:
            self._tokens = None
            if self._flow is not None:
                self.store.delete(self._flow.key)
                self._flow.forget_dpop_key()
