"""``OAuth`` and ``BearerToken``: ``requests`` auth objects for MCP servers.

``OAuth`` follows the shape of ``requests.auth.HTTPDigestAuth``: ``__call__``
adds the bearer token and registers a response hook; the hook answers a 401
(or a 403 ``insufficient_scope``) by authorizing and re-sending the request
once per authorization, at most ``max_auth_attempts`` times.  Unlike digest
auth, the token is shared: refresh and login are single-flight under one lock
per server for all threads, and the store's lock extends that to other processes.

Tokens are bound to the resource they were issued for (RFC 8707): each MCP server
an ``OAuth`` meets gets its own binding (an :class:`~._flow.Authorizer`: its store
record, tokens and lock), and a request carries a binding's token only when its URL
lies in that resource (origin and path).  A server's 401 never makes another server's
token go out or another server's login run.

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
from ..exceptions import remember_secret
from ._discovery import canonical_resource, offers_dpop, parse_www_authenticate, wants_dpop_nonce
from ._dpop import proof_nonce
from ._errors import AuthError, DPoPNonceError, UnboundServerError
from ._flow import Authorizer, expiring
from ._http import discard
from ._loopback import LoopbackLogin
from ._registration import Preregistered
from ._scopes import scope_set as _scope_set
from ._stores import MemoryTokenStore, TokenStore

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["BearerToken", "OAuth"]

log = logging.getLogger("mcpsync.auth")

_DEFAULT: Any = object()

#: Servers one ``OAuth`` keeps bindings for; requests to more carry no token.
MAX_SERVERS = 64


class BearerToken(AuthBase):
    """A fixed bearer token (an API key issued out of band)."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        remember_secret(self._token)
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

    One ``OAuth`` may serve several servers (a :class:`~mcpsync.ClientGroup`, or
    two clients): each server has its own tokens, store record and login, and a
    token goes only to the resource it was issued for.  With *server_url* or
    *key* it serves that one server only.

    :param store: a :class:`~mcpsync.auth.TokenStore`; default
        :class:`~mcpsync.auth.MemoryTokenStore` (nothing survives the process).
    :param login: a :class:`~mcpsync.auth.LoopbackLogin` (the default), or
        ``None`` for the web-app flow: a request that needs a login raises
        :class:`~mcpsync.auth.AuthorizationRequired`; use :meth:`begin` and
        :meth:`complete` with *redirect_uri*.
    :param client_name: the name shown to the user at registration.
    :param scopes: scopes to request in addition to those the server asks for.
    :param client_id: a pre-registered client (skips registration);
        *client_secret* for a confidential one.  The credentials go to one
        authorization server only: *issuer*, else the first one seen (kept in
        the store); another one is an :class:`~mcpsync.auth.IssuerMismatchError`.
    :param issuer: the authorization server *client_id* is registered with.
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
    :param server_url: the MCP server URL: this ``OAuth`` serves it alone;
        default: every server it meets, each with its own binding.
    :param key: the store key; default: the server's canonical URL.  Use one
        key per user in a multi-user web app; a key serves one server.
    :param session: a ``requests.Session`` for the OAuth requests (proxies,
        TLS).  Never the MCP transport's session, so its headers stay there.
    :param max_auth_attempts: authorizations per request before giving up.
    :param dpop: bind tokens to a key this client holds (DPoP, RFC 9449;
        needs ``pip install 'mcpsync[dpop]'``).  ``None`` (default): when the
        MCP server takes DPoP (a ``DPoP`` challenge or DPoP in its resource
        metadata), the authorization server offers ES256 DPoP and the package
        is installed; ``True``: always, else :class:`~mcpsync.auth.DPoPError`;
        ``False``: bearer tokens only.  The key is kept in *store* beside the tokens.
    :param resource_prefix: accept resource metadata whose ``resource`` merely
        contains the server URL (a path prefix, e.g. the origin for a server at
        ``/mcp``).  Off: it must be the server's URL (RFC 9728 §3.3), or its
        origin in the origin's own root metadata document.
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
        issuer: str | None = None,
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
        resource_prefix: bool = False,
    ) -> None:
        if grant_type not in ("authorization_code", "client_credentials", "jwt_bearer"):
            raise ValueError("grant_type must be 'authorization_code', 'client_credentials' or 'jwt_bearer'")
        if grant_type != "authorization_code" and not client_id:
            raise ValueError(f"grant_type={grant_type!r} needs client_id=")
        if grant_type == "jwt_bearer" and assertion is None:
            raise ValueError("grant_type='jwt_bearer' needs assertion= (e.g. an IdJagAssertion)")
        self.store = store if store is not None else MemoryTokenStore()
        self.login = LoopbackLogin() if login is _DEFAULT and redirect_uri is None else (
            None if login is _DEFAULT else login)
        self.client_name = client_name
        self.scopes = _scope_set(scopes)
        self.client_id = client_id
        self._client = Preregistered(client_id, client_secret, issuer) if client_id else None
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
        self.resource_prefix = resource_prefix
        self._key = key
        #: One binding per server, by canonical URL.
        self._bindings: dict[str, Authorizer] = {}
        self._guard = threading.Lock()
        #: Serves one server only: the one given, or the first one met (a key holds one server).
        self._pinned = server_url is not None or key is not None
        if server_url is not None:
            self._binding(server_url)

    def __repr__(self) -> str:
        return (f"<OAuth servers={sorted(self._bindings)!r} client_name={self.client_name!r} "
                f"grant_type={self.grant_type!r} store={self.store!r}>")

    # -- bindings ----------------------------------------------------------------------------

    def _new_binding(self, url: str) -> Authorizer:
        """A binding for the server at *url* (its URL policy resolves the host: no lock held)."""
        if self._session is None:
            import requests

            self._session = requests.Session()  # one for all bindings (a race makes a spare)
        return Authorizer(
            store=self.store, key=self._key or canonical_resource(url), server_url=url,
            session=self._session, login=self.login, client_name=self.client_name,
            scopes=self.scopes, client=self._client, client_metadata_url=self.client_metadata_url,
            redirect_uri=self.redirect_uri, grant_type=self.grant_type, private_key=self._private_key,
            signing_algorithm=self.signing_algorithm, resolve_hosts=self._resolve_hosts,
            assertion=self._assertion, dpop=self.dpop, resource_prefix=self.resource_prefix,
        )

    def _find(self, url: str, canonical: str) -> Authorizer | None:
        """The server's own binding, else the one whose tokens' resource contains *url* (the most specific)."""
        found = self._bindings.get(canonical)
        if found is None:
            covering = [b for b in self._bindings.values() if b.covers(url)]
            found = max(covering, key=lambda b: len(b.scope), default=None)
        return found

    def _binding(self, url: str) -> Authorizer | None:
        """The binding whose tokens a request to *url* may carry, made now for a new server;
        ``None`` when an ``OAuth`` that serves one server (or :data:`MAX_SERVERS`) meets another."""
        canonical = canonical_resource(url)
        with self._guard:
            found = self._find(url, canonical)
            if found is not None or self._full():
                return found
        new = self._new_binding(url)
        with self._guard:
            found = self._find(url, canonical)
            if found is not None or self._full():
                return found
            self._bindings[canonical] = new
            return new

    def _full(self) -> bool:
        # A server naming new URLs without end (a legacy endpoint per reconnect) cannot grow this.
        return len(self._bindings) >= (1 if self._pinned else MAX_SERVERS)

    def _bound(self, server_url: str | None) -> Authorizer:
        """The binding for an explicit call (:meth:`login_now`, :meth:`begin`, ...)."""
        if server_url is not None:
            flow = self._binding(server_url)
            if flow is None:
                raise UnboundServerError(f"this OAuth serves {self._only()} only")
            return flow
        if len(self._bindings) != 1:
            raise ValueError("pass the MCP server URL (server_url=)")
        return next(iter(self._bindings.values()))

    def _only(self) -> str:
        return ", ".join(sorted(self._bindings)) or "no server yet"

    @contextlib.contextmanager
    def _locked(self, flow: Authorizer) -> Iterator[None]:
        """Hold *flow*'s single-flight lock, waiting at most what is left of the request's deadline."""
        _deadline.acquire(flow.lock, "waiting for another thread's token refresh")
        try:
            yield
        finally:
            flow.lock.release()

    def _current_tokens(self, flow: Authorizer) -> dict[str, Any] | None:
        """Usable tokens (refreshed first when about to expire), or ``None``."""
        with self._locked(flow):
            if flow.tokens is None:
                flow.tokens = flow.load().get("tokens")
            tokens = flow.tokens
            if not tokens:
                return None
            if expiring(tokens, self.refresh_margin):
                flow.tokens = tokens = flow.refresh(tokens.get("access_token"))
            return tokens if tokens and tokens.get("access_token") else None

    @staticmethod
    def _present(flow: Authorizer, r: requests.PreparedRequest, tokens: dict[str, Any]) -> None:
        """Put *tokens* on *r*: ``Bearer``, or ``DPoP`` with a fresh proof (RFC 9449 §7.1)."""
        token = str(tokens["access_token"])
        remember_secret(token)
        key = flow.tokens_key(tokens)
        if key is None:
            r.headers["Authorization"] = f"Bearer {token}"
            r.headers.pop("DPoP", None)
            return
        url = str(r.url)
        r.headers["Authorization"] = f"DPoP {token}"
        r.headers["DPoP"] = key.proof(str(r.method or "GET"), url, nonce=flow.nonces.get(url), access_token=token)

    # -- requests hooks ---------------------------------------------------------------------

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        flow = self._binding(_server_of(r))
        if flow is not None:
            with _deadline.within(_deadline.of(r)):
                tokens = self._current_tokens(flow)
            if tokens is not None:
                self._present(flow, r, tokens)
        r.register_hook("response", self._handle_response)  # type: ignore[no-untyped-call]
        return r

    def _resend(
        self, flow: Authorizer, refused: requests.Response, tokens: dict[str, Any], kwargs: dict[str, Any]
    ) -> requests.Response:
        """Send *refused*'s request again with *tokens* (and a new proof)."""
        # Read (a bounded part of) the refused body, so a short one's connection is reused.
        discard(refused)
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

    def _handle_response(self, response: requests.Response, **kwargs: Any) -> requests.Response:
        with _deadline.within(_deadline.of(response.request)):
            return self._answer(response, kwargs)

    def _answer(self, response: requests.Response, kwargs: dict[str, Any]) -> requests.Response:
        """The response hook's work: answer 401s (and 403 step-ups), within the request's deadline."""
        current = response
        attempts = 0
        after_nonce = False  # *current* answers a re-send made only to add a nonce
        url = str(current.request.url)  # DPoP nonces are the URL's
        server = _server_of(current.request)
        flow = self._binding(server)
        try:
            if flow is None:
                if current.status_code == 401:  # it got no token: it never answers 403 then
                    raise UnboundServerError(
                        f"a server this OAuth is not bound to asked for authorization; it serves "
                        f"{self._only()} only: give each server an OAuth of its own"
                    )
                return current
            while True:
                status = current.status_code
                header = current.headers.get("WWW-Authenticate")
                nonce = flow.nonces.update(url, current.headers.get("DPoP-Nonce"))
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
                    with self._locked(flow):
                        tokens = flow.tokens
                    if tokens and tokens.get("access_token"):
                        current = self._resend(flow, current, tokens, kwargs)
                        after_nonce = True
                        continue
                after_nonce = False
                challenge = parse_www_authenticate(header)
                step_up = status == 403 and challenge.get("error") == "insufficient_scope"
                if (status != 401 and not step_up) or attempts >= self.max_auth_attempts:
                    return current
                attempts += 1
                sent = current.request.headers.get("Authorization")
                tokens = self._reauthorize(
                    flow, status, challenge, sent if isinstance(sent, str) else None, offers_dpop(header)
                )
                if tokens is None or not flow.covers(server):
                    return current
                current = self._resend(flow, current, tokens, kwargs)
        except BaseException:
            current.close()  # refused, and nobody else will read it: free its connection
            raise

    def _reauthorize(
        self, flow: Authorizer, status: int, challenge: dict[str, str], sent: str | None, dpop_offered: bool
    ) -> dict[str, Any] | None:
        """Tokens to retry with, or ``None`` to give the refusal to the caller."""
        sent_token = sent.split(" ", 1)[-1] if sent else None
        with self._locked(flow):
            tokens = flow.load().get("tokens") or flow.tokens
            current = tokens.get("access_token") if tokens else None
            if status == 401 and tokens and current and sent_token != current and not expiring(tokens):
                flow.tokens = tokens
                return tokens  # another thread (or process) got a new token meanwhile
            granted = _scope_set((tokens or {}).get("scope")) if sent else set()
            if status == 401 and sent and tokens and tokens.get("refresh_token"):
                refreshed = flow.refresh(current)
                if refreshed:
                    flow.tokens = refreshed
                    return refreshed
            if status == 403:
                required = _scope_set(challenge.get("scope"))
                if required and required <= granted:
                    # The server refuses scopes we were already granted: asking again cannot help.
                    log.warning("the server still wants scopes it was granted; not authorizing again")
                    return None
            log.info("authorization needed for %s (HTTP %s)", flow.canonical, status)
            flow.tokens = flow.authorize(challenge, granted, dpop_offered=dpop_offered)
            return flow.tokens

    # -- explicit flows -----------------------------------------------------------------------

    def login_now(self, server_url: str | None = None) -> None:
        """Log in now (e.g. from a ``login`` command) instead of on the first 401."""
        flow = self._bound(server_url)
        with flow.lock:
            flow.tokens = flow.authorize({}, set())

    def begin(self, server_url: str | None = None) -> str:
        """Web-app flow, step 1: the authorization URL to redirect the user's browser to.

        The login in progress (PKCE verifier, state) is kept in the store, so
        :meth:`complete` may run in another worker process sharing the store.
        """
        if server_url is None and not self._bindings:
            raise ValueError("begin() needs the MCP server URL")
        return self._bound(server_url).begin()

    def complete(self, callback_url: str, server_url: str | None = None) -> None:
        """Web-app flow, step 2: in the callback view, with the full callback URL.

        Checks ``state`` and ``iss``, exchanges the code and stores the tokens.

        :param server_url: the server the login is for; needed only when this
            ``OAuth`` serves several.
        :raises mcpsync.auth.StateMismatchError: unknown, replayed or expired ``state``.
        """
        if server_url is None and not self._bindings:
            raise AuthError("complete() before begin(): pass server_url= to OAuth or call begin()")
        flow = self._bound(server_url)
        with flow.lock:
            flow.tokens = flow.complete(callback_url)

    def logout(self, server_url: str | None = None) -> None:
        """Forget a server's tokens and registration in the store (default: every server's)."""
        flows = [self._bound(server_url)] if server_url else list(self._bindings.values())
        for flow in flows:
            with flow.lock:
                flow.tokens = None
                self.store.delete(flow.key)
                flow.forget_dpop_key()


#: The ``PreparedRequest`` attribute an mcpsync transport sets to the MCP server URL the
#: client was given (the same string as in mcpsync.transports.http).
SERVER_ATTRIBUTE = "mcpsync_server"


def _server_of(r: Any) -> str:
    """The MCP server a request is for: the URL the transport was given (a legacy HTTP+SSE
    message endpoint is the server's own, named by it), else the request's own URL."""
    server = getattr(r, SERVER_ATTRIBUTE, None)
    return server if isinstance(server, str) else str(r.url)
