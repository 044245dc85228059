"""``OAuth`` and ``BearerToken``: ``requests`` auth objects for MCP servers.

``OAuth`` follows the shape of ``requests.auth.HTTPDigestAuth``: ``__call__``
adds the bearer token and registers a response hook; the hook answers a 401
(or a 403 ``insufficient_scope``) by authorizing and re-sending the request
once per authorization, at most ``max_auth_attempts`` times.  Unlike digest
auth, the token is shared: refresh and login are single-flight under one lock
per server for all threads, and the store's lock extends that to other processes.

Tokens are bound to the resource they were issued for (RFC 8707): each MCP server
an ``OAuth`` meets gets its own binding (a :class:`~._binding.Binding`: its store
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
from collections.abc import Callable, Iterable
from typing import Any

import requests
from requests.auth import AuthBase

from . import _deadline, _flow, _tokens
from ..exceptions import remember_secret
from ..rpc.deadline import REQUEST_ATTRIBUTE
from ._binding import Binding, Preregistered, Settings
from ._discovery import canonical_resource, offers_dpop, parse_www_authenticate, wants_dpop_nonce
from ._dpop import proof_nonce, refuse_nonce_loop
from ._errors import AuthError, UnboundServerError
from ._http import discard
from ._loopback import LoopbackLogin
from ._record import Tokens, scope_set
from ._stores import MemoryTokenStore, TokenStore


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

    def __init__(self, *, store: TokenStore | None = None, login: LoopbackLogin | None = _DEFAULT,
                 client_name: str = "mcpsync", scopes: Iterable[str] | str | None = None, client_id: str | None = None,
                 client_secret: str | None = None, issuer: str | None = None, client_metadata_url: str | None = None,
                 redirect_uri: str | None = None, grant_type: str = "authorization_code", private_key: Any = None,
                 signing_algorithm: str | None = None, server_url: str | None = None, key: str | None = None,
                 session: requests.Session | None = None, max_auth_attempts: int = 3, refresh_margin: float = 30.0,
                 resolve_hosts: bool = True, assertion: Callable[[str, str, str | None], str] | None = None,
                 dpop: bool | None = None, resource_prefix: bool = False) -> None:
        if grant_type not in ("authorization_code", "client_credentials", "jwt_bearer"):
            raise ValueError("grant_type must be 'authorization_code', 'client_credentials' or 'jwt_bearer'")
        if grant_type != "authorization_code" and not client_id:
            raise ValueError(f"grant_type={grant_type!r} needs client_id=")
        if grant_type == "jwt_bearer" and assertion is None:
            raise ValueError("grant_type='jwt_bearer' needs assertion= (e.g. an IdJagAssertion)")
        self.store = store if store is not None else MemoryTokenStore()
        self.login = (LoopbackLogin() if redirect_uri is None else None) if login is _DEFAULT else login
        self.max_auth_attempts = max_auth_attempts
        self.refresh_margin = refresh_margin
        client = Preregistered(client_id, client_secret, issuer) if client_id else None
        #: What every binding of this ``OAuth`` shares.
        self.settings = Settings(self.store, self.login, session or requests.Session(), client_name,
                                 frozenset(scope_set(scopes)), client, client_metadata_url, redirect_uri, grant_type,
                                 private_key, signing_algorithm, resolve_hosts, assertion, dpop, resource_prefix, key)
        #: One binding per server, by canonical URL.
        self._bindings: dict[str, Binding] = {}
        self._guard = threading.Lock()
        #: Serves one server only: the one given, or the first one met (a key holds one server).
        self._pinned = server_url is not None or key is not None
        if server_url is not None:
            self._binding(server_url)

    def __repr__(self) -> str:
        return (f"<OAuth servers={sorted(self._bindings)!r} client_name={self.settings.client_name!r} "
                f"grant_type={self.settings.grant_type!r} store={self.store!r}>")

    # -- bindings ----------------------------------------------------------------------------

    def _binding(self, url: str) -> Binding | None:
        """The binding whose tokens a request to *url* may carry: the server's own, else the most
        specific one whose tokens' resource contains *url*, else one made now for a new server;
        ``None`` when an ``OAuth`` that serves one server (or :data:`MAX_SERVERS`) meets another."""
        canonical = canonical_resource(url)
        new: Binding | None = None
        while True:
            with self._guard:
                found = self._bindings.get(canonical) or max(
                    (b for b in self._bindings.values() if b.covers(url)), key=lambda b: len(b.scope), default=None)
                # A server naming new URLs without end (a legacy endpoint per reconnect) cannot grow this.
                if found is not None or len(self._bindings) >= (1 if self._pinned else MAX_SERVERS):
                    return found
                if new is not None:
                    self._bindings[canonical] = new
                    return new
            new = Binding(self.settings, url)  # outside the lock: its URL policy resolves the host

    def _bound(self, server_url: str | None) -> Binding:
        """The binding for an explicit call (:meth:`login_now`, :meth:`begin`, ...)."""
        if server_url is None and len(self._bindings) != 1:
            raise ValueError("pass the MCP server URL (server_url=)")
        binding = self._binding(server_url) if server_url is not None else next(iter(self._bindings.values()))
        if binding is None:
            raise UnboundServerError(f"this OAuth serves {self._only()} only")
        return binding

    def _only(self) -> str:
        return ", ".join(sorted(self._bindings)) or "no server yet"

    @staticmethod
    def _locked(binding: Binding) -> contextlib.AbstractContextManager[None]:
        """Hold *binding*'s single-flight lock, waiting at most what is left of the request's deadline."""
        return _deadline.held(binding.lock, "waiting for another thread's token refresh")

    def _current_tokens(self, binding: Binding) -> Tokens | None:
        """Usable tokens (refreshed first when about to expire), or ``None``."""
        with self._locked(binding):
            if binding.tokens is None:
                binding.tokens = binding.load().tokens
            tokens = binding.tokens
            if tokens and tokens.expiring(self.refresh_margin):
                binding.tokens = tokens = _tokens.refresh(binding, tokens.access_token)
            return tokens if tokens and tokens.access_token else None

    @staticmethod
    def _present(binding: Binding, r: requests.PreparedRequest, tokens: Tokens) -> None:
        """Put *tokens* on *r*: ``Bearer``, or ``DPoP`` with a fresh proof (RFC 9449 §7.1)."""
        token, key, url = tokens.access_token, binding.dpop.of_tokens(tokens), str(r.url)
        remember_secret(token)
        r.headers["Authorization"] = f"{'Bearer' if key is None else 'DPoP'} {token}"
        if key is None:
            r.headers.pop("DPoP", None)
        else:
            r.headers["DPoP"] = key.proof(str(r.method or "GET"), url, nonce=binding.dpop.nonces.get(url),
                                          access_token=token)

    # -- requests hooks ---------------------------------------------------------------------

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        binding = self._binding(_server_of(r))
        if binding is not None:
            with _deadline.within(_deadline.of(r)):
                tokens = self._current_tokens(binding)
            if tokens is not None:
                self._present(binding, r, tokens)
        r.register_hook("response", self._handle_response)  # type: ignore[no-untyped-call]
        return r

    def _resend(
        self, binding: Binding, refused: requests.Response, tokens: Tokens, kwargs: dict[str, Any]
    ) -> requests.Response:
        """Send *refused*'s request again with *tokens* (and a new proof)."""
        # Read (a bounded part of) the refused body, so a short one's connection is reused.
        discard(refused)
        prep = refused.request.copy()
        deadline = _deadline.of(refused.request)
        if deadline is not None:
            # The re-send is the same call: same deadline, and only what is left of it to wait.
            setattr(prep, REQUEST_ATTRIBUTE, deadline)
            given = kwargs.get("timeout")
            parts = given if isinstance(given, tuple) else (given, given)
            connect, read = (float("inf") if part is None else float(part) for part in parts)
            kwargs = {**kwargs, "timeout": _deadline.bounded((connect, read), "re-sending the request")}
        self._present(binding, prep, tokens)
        assert refused.connection is not None
        retried: requests.Response = refused.connection.send(prep, **kwargs)
        retried.history.append(refused)
        retried.request = prep
        return retried

    def _handle_response(self, response: requests.Response, **kwargs: Any) -> requests.Response:
        """The response hook: answer 401s (and 403 step-ups), within the request's deadline."""
        with _deadline.within(_deadline.of(response.request)):
            current = response
            try:
                server = _server_of(current.request)
                binding = self._binding(server)
                if binding is None:
                    if current.status_code == 401:  # it got no token: it never answers 403 then
                        raise UnboundServerError(
                            f"a server this OAuth is not bound to asked for authorization; it serves "
                            f"{self._only()} only: give each server an OAuth of its own"
                        )
                    return current
                attempts, after_nonce = 0, False  # after_nonce: *current* answers a re-send made to add a nonce
                while True:
                    tokens, after_nonce = self._answer(binding, server, current, attempts, after_nonce)
                    if tokens is None:
                        return current
                    attempts += not after_nonce
                    current = self._resend(binding, current, tokens, kwargs)
            except BaseException:
                current.close()  # refused, and nobody else will read it: free its connection
                raise

    def _answer(self, binding: Binding, server: str, response: requests.Response, attempts: int, after_nonce: bool
                ) -> tuple[Tokens | None, bool]:
        """The tokens to send *response*'s request again with (``None``: give it to the caller),
        and whether that re-send only adds a DPoP nonce."""
        status, header = response.status_code, response.headers.get("WWW-Authenticate")
        nonce = binding.dpop.nonces.update(str(response.request.url), response.headers.get("DPoP-Nonce"))
        proof = response.request.headers.get("DPoP")
        if status == 401 and isinstance(proof, str) and wants_dpop_nonce(header):
            # RFC 9449 §9: one re-send with the server's nonce; a second demand in a row is a
            # loop (each re-send alternates with an authorization, so the number of sends stays
            # bounded by max_auth_attempts).
            refuse_nonce_loop("MCP server", after_nonce, nonce, proof_nonce(proof))
            with self._locked(binding):
                tokens = binding.tokens
            if tokens and tokens.access_token:
                return tokens, True
        challenge = parse_www_authenticate(header)
        step_up = status == 403 and challenge.get("error") == "insufficient_scope"
        if (status != 401 and not step_up) or attempts >= self.max_auth_attempts:
            return None, False
        sent = response.request.headers.get("Authorization")
        tokens = self._reauthorize(binding, status, challenge, sent if isinstance(sent, str) else None,
                                   offers_dpop(header))
        return (tokens if binding.covers(server) else None), False

    def _reauthorize(self, binding: Binding, status: int, challenge: dict[str, str], sent: str | None,
                     dpop_offered: bool) -> Tokens | None:
        """Tokens to retry with, or ``None`` to give the refusal to the caller."""
        sent_token = sent.split(" ", 1)[-1] if sent else None
        with self._locked(binding):
            tokens = binding.load().tokens or binding.tokens
            current = tokens.access_token if tokens else None
            if status == 401 and tokens and current and sent_token != current and not tokens.expiring():
                binding.tokens = tokens
                return tokens  # another thread (or process) got a new token meanwhile
            granted = scope_set(tokens.scope) if sent and tokens else set()
            if status == 401 and sent and tokens and tokens.refresh_token and (
                    refreshed := _tokens.refresh(binding, current)):
                binding.tokens = refreshed
                return refreshed
            required = scope_set(challenge.get("scope"))
            if status == 403 and required and required <= granted:
                # The server refuses scopes we were already granted: asking again cannot help.
                log.warning("the server still wants scopes it was granted; not authorizing again")
                return None
            log.info("authorization needed for %s (HTTP %s)", binding.canonical, status)
            binding.tokens = _flow.authorize(binding, challenge, granted, dpop_offered=dpop_offered)
            return binding.tokens

    # -- explicit flows -----------------------------------------------------------------------

    def login_now(self, server_url: str | None = None) -> None:
        """Log in now (e.g. from a ``login`` command) instead of on the first 401."""
        binding = self._bound(server_url)
        with binding.lock:
            binding.tokens = _flow.authorize(binding, {}, set())

    def begin(self, server_url: str | None = None) -> str:
        """Web-app flow, step 1: the authorization URL to redirect the user's browser to.

        The login in progress (PKCE verifier, state) is kept in the store, so
        :meth:`complete` may run in another worker process sharing the store.
        """
        return _flow.begin(self._bound(server_url))

    def complete(self, callback_url: str, server_url: str | None = None) -> None:
        """Web-app flow, step 2: in the callback view, with the full callback URL.

        Checks ``state`` and ``iss``, exchanges the code and stores the tokens.

        :param server_url: the server the login is for; needed only when this
            ``OAuth`` serves several.
        :raises mcpsync.auth.StateMismatchError: unknown, replayed or expired ``state``.
        """
        if server_url is None and not self._bindings:
            raise AuthError("complete() before begin(): pass server_url= to OAuth or call begin()")
        binding = self._bound(server_url)
        with binding.lock:
            binding.tokens = _flow.complete(binding, callback_url)

    def logout(self, server_url: str | None = None) -> None:
        """Forget a server's tokens and registration in the store (default: every server's)."""
        for binding in [self._bound(server_url)] if server_url else list(self._bindings.values()):
            with binding.lock:
                binding.tokens = None
                self.store.delete(binding.key)
                binding.dpop.forget()


#: The ``PreparedRequest`` attribute an mcpsync transport sets to the MCP server URL the
#: client was given (the same string as in mcpsync.transports.http).
SERVER_ATTRIBUTE = "mcpsync_server"


def _server_of(r: Any) -> str:
    """The MCP server a request is for: the URL the transport was given (a legacy HTTP+SSE
    message endpoint is the server's own, named by it), else the request's own URL."""
    server = getattr(r, SERVER_ATTRIBUTE, None)
    return server if isinstance(server, str) else str(r.url)
