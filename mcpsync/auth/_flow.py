"""The authorization-code and client-credentials flows, without any ``requests`` hook logic.

:class:`Authorizer` runs discovery, registration, the login and the token
requests for one MCP server, and keeps the results in a token store record::

    {"tokens": {...}, "clients": {issuer: {...}}, "resource_metadata": {...},
     "server_metadata": {...}, "resource": "https://...", "server": "https://...",
     "client_issuer": "https://..."}

``server`` is the MCP server the record belongs to (a record under the same key for
another server is refused); ``client_issuer`` the authorization server a pre-registered
``client_id`` was first used with (its credentials go nowhere else).  The tokens carry
their ``resource`` and ``bound_to``, the URL prefix they may be sent to.

The browser login's own pieces (authorization URL, callback checks, the
web-app flow's pending logins) live in :mod:`mcpsync.auth._login`, which takes
plain values and never this class.  With DPoP (:mod:`mcpsync.auth._dpop`) the
record also holds ``"dpop_key"``, the private key the tokens are bound to.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import _deadline, _login
from ._discovery import (
    UrlPolicy,
    canonical_resource,
    discover_resource_metadata,
    discover_server_metadata,
    legacy_server_metadata,
)
from ._discovery import within as _within
from ._dpop import DPoPKey, DPoPKeys
from ._errors import AuthorizationRequired, DiscoveryError, RegistrationError, TokenRequestError, TokenStoreError
from ._pkce import new_state, new_verifier
from ._registration import Preregistered, choose_auth_method, register_client, token_request
from ._scopes import join_scopes as _join
from ._scopes import scope_set as _scope_set

if TYPE_CHECKING:  # pragma: no cover
    import requests

    from ._loopback import LoopbackLogin
    from ._stores import TokenStore

__all__ = ["Authorizer"]

log = logging.getLogger("mcpsync.auth")

#: A refused refresh token that a new login (not a retry) may cure.
_DEAD_GRANT = ("invalid_grant", "invalid_client", "unauthorized_client")


class Authorizer:
    """Discovery, registration, login and token requests for one MCP server (one store key).

    It is also that server's *binding* in :class:`~mcpsync.auth.OAuth`: the tokens in use
    (:attr:`tokens`), the lock that makes refresh and login single-flight, and the
    :attr:`scope` those tokens may be sent to.
    """

    def __init__(
        self,
        *,
        store: TokenStore,
        key: str,
        server_url: str,
        session: requests.Session,
        login: LoopbackLogin | None,
        client_name: str,
        scopes: set[str],
        client: Preregistered | None,
        client_metadata_url: str | None,
        redirect_uri: str | None,
        grant_type: str,
        private_key: Any,
        signing_algorithm: str | None,
        resolve_hosts: bool,
        assertion: Callable[[str, str, str | None], str] | None = None,
        dpop: bool | None = None,
        resource_prefix: bool = False,
    ) -> None:
        self.store = store
        self.key = key
        self.server_url = server_url
        #: The server's canonical URL: what its record is for.
        self.canonical = canonical_resource(server_url)
        self.session = session
        self.login = login
        self.client_name = client_name
        self.scopes = scopes
        self.client = client
        self.client_metadata_url = client_metadata_url
        self.redirect_uri = redirect_uri
        self.grant_type = grant_type
        self.private_key = private_key
        self.signing_algorithm = signing_algorithm
        self.assertion = assertion
        self.resource_prefix = resource_prefix
        self.policy = UrlPolicy(server_url, resolve=resolve_hosts)
        self.dpop = DPoPKeys(dpop, self.load)
        #: The latest ``DPoP-Nonce`` of each server (authorization and MCP server).
        self.nonces = self.dpop.nonces
        self._tokens: dict[str, Any] | None = None
        #: Where the tokens may go (canonical): the resource they were issued for, else the server's URL.
        self.scope = self.canonical
        #: Held (by :class:`~mcpsync.auth.OAuth`) while tokens are refreshed or a login runs.
        self.lock = threading.RLock()

    @property
    def tokens(self) -> dict[str, Any] | None:
        """The tokens in use (``None``: not read from the store yet)."""
        return self._tokens

    @tokens.setter
    def tokens(self, tokens: dict[str, Any] | None) -> None:
        self._tokens = tokens
        bound = (tokens or {}).get("bound_to") or (tokens or {}).get("resource")
        if isinstance(bound, str) and bound:
            self.scope = canonical_resource(bound)

    def covers(self, url: str) -> bool:
        """Whether a request to *url* may carry this server's tokens (RFC 8707: in their resource)."""
        return canonical_resource(url) == self.canonical or _within(url, self.scope)

    def load(self) -> dict[str, Any]:
        """This server's record (``{}``: none).

        :raises TokenStoreError: the record under this key is another server's (one key
            given to two servers): its tokens are not used here.
        """
        record = self.store.load(self.key) or {}
        if record.get("server") not in (None, self.canonical):
            raise TokenStoreError(
                "the token store's record under this key belongs to another MCP server; "
                "use one key per server (OAuth(key=...))"
            )
        return record

    def forget_dpop_key(self) -> None:
        """After a logout: the next login binds its tokens to a new key."""
        self.dpop.forget()

    def tokens_key(self, tokens: dict[str, Any], record: dict[str, Any] | None = None) -> DPoPKey | None:
        """The key *tokens* are bound to (``None`` for bearer tokens)."""
        return self.dpop.of_tokens(tokens, record)

    # -- discovery, scopes, registration --------------------------------------------------------

    def discover(self, challenge: dict[str, str]) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
        """(resource metadata or None, validated server metadata, resource indicator)."""
        prm = discover_resource_metadata(
            self.session, self.server_url, self.policy, challenge.get("resource_metadata"),
            prefix=self.resource_prefix,
        )
        if prm is None:
            log.debug("no protected resource metadata: using the 2025-03-26 discovery")
            return None, legacy_server_metadata(self.session, self.server_url, self.policy), self.canonical
        issuer = prm["authorization_servers"][0]
        self.policy.check(issuer, "authorization server")
        meta = discover_server_metadata(self.session, issuer, self.policy)
        if meta is None:
            raise DiscoveryError("the authorization server publishes no metadata (RFC 8414 / OpenID Connect)")
        return prm, meta, str(prm["resource"])

    def select_scopes(
        self, challenge: dict[str, str], prm: dict[str, Any] | None, meta: dict[str, Any], granted: set[str]
    ) -> set[str]:
        """MCP §Scope Selection Strategy: the challenge's ``scope``, else the PRM's ``scopes_supported``."""
        if "scope" in challenge:
            wanted = _scope_set(challenge["scope"])
        else:
            wanted = _scope_set((prm or {}).get("scopes_supported"))
        wanted |= self.scopes | granted  # step-up keeps what we had (union)
        offered = _scope_set(meta.get("scopes_supported"))
        # SEP-2207: ask for a refresh token only where the server lists offline_access.
        if wanted and "offline_access" in offered and self.grant_type == "authorization_code":
            wanted.add("offline_access")
        return wanted

    def client_for(
        self, meta: dict[str, Any], record: dict[str, Any], redirect_uri: str | None, scope: str | None
    ) -> dict[str, Any]:
        """The client registration to use with the issuer of *meta*.

        :raises IssuerMismatchError: pre-registered credentials that belong to another issuer.
        """
        issuer = meta["issuer"]
        if self.client is not None:
            self.client.check(issuer, record.get("client_issuer"))
            secret = self.client.secret
            method = choose_auth_method(meta, has_secret=bool(secret), has_key=self.private_key is not None)
            client: dict[str, Any] = {"issuer": issuer, "client_id": self.client.client_id,
                                      "token_endpoint_auth_method": method, "source": "preregistered"}
            if secret:
                client["client_secret"] = secret
            return client
        if self.grant_type != "authorization_code":
            raise RegistrationError(f"{self.grant_type} needs a pre-registered client_id")
        stored = (record.get("clients") or {}).get(issuer)
        expired = stored and stored.get("client_secret_expires_at") and stored["client_secret_expires_at"] < time.time()
        if (stored and stored.get("issuer") == issuer and not expired
                and (redirect_uri is None or redirect_uri in stored.get("redirect_uris", []))):
            return dict(stored)
        assert redirect_uri is not None
        return register_client(
            self.session, meta, self.policy, client_name=self.client_name, redirect_uris=[redirect_uri],
            scope=scope, client_metadata_url=self.client_metadata_url, native=self.login is not None,
            grant_types=["authorization_code", "refresh_token"],
        )

    # -- flows ------------------------------------------------------------------------------

    def authorize(self, challenge: dict[str, str], granted: set[str], *, dpop_offered: bool = False) -> dict[str, Any]:
        """Run discovery and a full authorization; returns the new tokens (saved).

        :param dpop_offered: the MCP server's challenge included ``DPoP`` (it takes DPoP-bound tokens).
        :raises AuthorizationRequired: in the web-app flow (``login=None``).
        """
        prm, meta, resource = self.discover(challenge)
        record = self.load()
        dpop = self.dpop.for_new_tokens(meta, prm, record, offered=dpop_offered)
        record.update(resource_metadata=prm, server_metadata=meta, resource=resource)
        scope = _join(self.select_scopes(challenge, prm, meta, granted))
        if self.grant_type != "authorization_code":
            client = self.client_for(meta, record, None, scope)
            tokens = self._token(meta, client, self._headless_grant(meta["issuer"], resource, scope), dpop)
            return self._save(record, meta, client, tokens, resource)
        if self.login is None:
            raise AuthorizationRequired(self.start(meta, record, resource, scope, dpop_offered))
        registered = ((record.get("clients") or {}).get(meta["issuer"]) or {}).get("redirect_uris") or [""]
        preferred = urlsplit(registered[0]).port if registered[0].startswith("http://127.0.0.1:") else None
        with self.login.receiver(preferred) as receiver:
            client = self.client_for(meta, record, receiver.redirect_uri, scope)
            state, verifier = new_state(), new_verifier()
            url = _login.authorization_url(
                self.policy, meta, client, receiver.redirect_uri, state, verifier, resource, scope
            )
            receiver.state = state  # before the browser: a fast callback must find it
            log.info("opening the browser to log in at %s", urlsplit(meta["issuer"]).netloc)
            # The one exception to the call's deadline: a person at a browser has the
            # login's own timeout, and what they achieved is exchanged and saved even
            # when the call that needed it has run out of time meanwhile.
            with _deadline.suspended():
                self.login.open(url)
                params = receiver.wait(state, self.login.timeout)
        with _deadline.suspended():
            tokens = self._exchange(meta, client, params, state, verifier, receiver.redirect_uri, resource, scope, dpop)
            return self._save(record, meta, client, tokens, resource)

    def _exchange(
        self, meta: dict[str, Any], client: dict[str, Any], params: dict[str, str], state: str, verifier: str,
        redirect_uri: str, resource: str, scope: str | None, dpop: DPoPKey | None,
    ) -> dict[str, Any]:
        """Check the login response and trade its code for tokens."""
        code = _login.check_callback(meta, params, state)
        tokens = self._token(meta, client, _login.code_grant(code, redirect_uri, verifier, resource), dpop)
        if scope and "scope" not in tokens:
            tokens["scope"] = scope
        return tokens

    def _headless_grant(self, issuer: str, resource: str, scope: str | None) -> dict[str, str]:
        """The token request form of ``client_credentials`` or an RFC 7523 JWT bearer grant."""
        if self.grant_type == "jwt_bearer":
            if self.assertion is None:
                raise RegistrationError("grant_type='jwt_bearer' needs assertion=")
            data = {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                    "assertion": self.assertion(issuer, resource, scope), "resource": resource}
        else:
            data = {"grant_type": "client_credentials", "resource": resource}
        if scope:
            data["scope"] = scope
        return data

    def _token(
        self, meta: dict[str, Any], client: dict[str, Any], data: dict[str, str], dpop: DPoPKey | None
    ) -> dict[str, Any]:
        return token_request(
            self.session, meta, client, data, self.policy, private_key=self.private_key,
            signing_algorithm=self.signing_algorithm, dpop=dpop, nonces=self.nonces,
        )

    def _save(
        self, record: dict[str, Any], meta: dict[str, Any], client: dict[str, Any], tokens: dict[str, Any],
        resource: str,
    ) -> dict[str, Any]:
        # Where the tokens may go: their resource; after the 2025-03-26 discovery (no
        # resource metadata: the server's origin is its authorization server) the origin.
        parts = urlsplit(self.canonical)
        bound = resource if record.get("resource_metadata") else f"{parts.scheme}://{parts.netloc}"
        tokens.update(issuer=meta["issuer"], resource=resource, bound_to=bound)
        with self.store.lock(self.key):
            current = self.load()
            current.update({k: v for k, v in record.items() if k != "tokens"})
            current["server"] = self.canonical
            current.setdefault("clients", {})
            if client.get("source") in ("dcr", "cimd"):
                current["clients"][meta["issuer"]] = client
            elif client.get("source") == "preregistered":
                current["client_issuer"] = meta["issuer"]
            current["tokens"] = tokens
            self.dpop.keep(current, tokens)
            self.store.save(self.key, current)
        return tokens

    # -- web-app flow ------------------------------------------------------------------------

    def start(
        self, meta: dict[str, Any], record: dict[str, Any], resource: str, scope: str | None,
        dpop_offered: bool = False,
    ) -> str:
        """Register if needed, remember a pending login in the store; the authorization URL."""
        if self.redirect_uri is None:
            raise RegistrationError("the web-app flow (login=None) needs redirect_uri=")
        client = self.client_for(meta, record, self.redirect_uri, scope)
        state, verifier = new_state(), new_verifier()
        _login.save_pending(self.store, self.key, {
            "state": state, "verifier": verifier, "scope": scope, "resource": resource, "server_metadata": meta,
            "client": client, "resource_metadata": record.get("resource_metadata"), "dpop_offered": dpop_offered,
        })
        return _login.authorization_url(self.policy, meta, client, self.redirect_uri, state, verifier, resource, scope)

    def begin(self) -> str:
        """Discover, pick scopes and start a web-app login; the authorization URL."""
        prm, meta, resource = self.discover({})
        record = self.load()
        record.update(resource_metadata=prm)
        granted = _scope_set((record.get("tokens") or {}).get("scope"))
        return self.start(meta, record, resource, _join(self.select_scopes({}, prm, meta, granted)))

    def complete(self, callback_url: str) -> dict[str, Any]:
        """Finish the web-app login the callback URL belongs to; the new tokens (saved)."""
        pending, params = _login.take_pending(self.store, self.key, callback_url)
        meta, client, resource = pending["server_metadata"], pending["client"], pending["resource"]
        prm = pending.get("resource_metadata")
        assert self.redirect_uri is not None
        dpop = self.dpop.for_new_tokens(meta, prm, offered=pending.get("dpop_offered") is True)
        tokens = self._exchange(meta, client, params, pending["state"], pending["verifier"], self.redirect_uri,
                                resource, pending.get("scope"), dpop)
        record = {"server_metadata": meta, "resource": resource, "resource_metadata": prm}
        return self._save(record, meta, client, tokens, resource)

    # -- refresh -----------------------------------------------------------------------------

    def refresh(self, stale: str | None) -> dict[str, Any] | None:
        """Refresh under the store lock; a peer's fresher token wins.  ``None``: no usable grant."""
        with self.store.lock(self.key):
            record = self.load()
            tokens = record.get("tokens")
            if not tokens:
                return None
            if tokens.get("access_token") != stale and not expiring(tokens):
                return dict(tokens)  # another thread or process refreshed already
            refresh_token = tokens.get("refresh_token")
            meta = record.get("server_metadata")
            if not meta:
                return None
            # Pre-registered credentials go through their issuer check again.
            client = (self.client_for(meta, record, None, None) if self.client is not None
                      else (record.get("clients") or {}).get(tokens.get("issuer")))
            if self.grant_type != "authorization_code" and client and not refresh_token:
                data = self._headless_grant(meta["issuer"], tokens.get("resource", ""), tokens.get("scope"))
            elif refresh_token and client:
                data = {"grant_type": "refresh_token", "refresh_token": refresh_token,
                        "resource": tokens.get("resource", "")}
            else:
                return None
            # A DPoP-bound refresh token is bound to the same key (RFC 9449 §5); bearer
            # tokens stay bearer tokens (the server took them).  (We hold the store lock:
            # the key comes from this record.)
            try:
                new = self._token(meta, client, data, self.tokens_key(tokens, record))
            except TokenRequestError as exc:
                # A refused client-credentials or JWT bearer grant is final: asking
                # again with the same credentials (a new login) cannot help.
                if data["grant_type"] != "refresh_token" or exc.error not in _DEAD_GRANT:
                    raise
                return self._after_refused_refresh(exc.error, refresh_token)
            if refresh_token:
                new.setdefault("refresh_token", refresh_token)
            new.setdefault("scope", tokens.get("scope"))
            new.update({k: tokens[k] for k in ("issuer", "resource", "bound_to") if k in tokens})
            record["tokens"] = new
            self.dpop.keep(record, new)
            # Saved before anyone uses it: the old refresh token may already be spent.
            self.store.save(self.key, record)
            return new

    def _after_refused_refresh(self, error: str | None, spent: str | None) -> dict[str, Any] | None:
        """The AS refused our refresh token: a peer's rotation, or a dead grant (RELIABILITY F6).

        A peer that does not take our lock (another program, an older
        version) may have rotated the token meanwhile: re-read the store and
        use its tokens when they changed.  Otherwise nothing is deleted: the
        caller logs in again and the new tokens replace the dead ones, so a
        lost race can never wipe credentials a peer just saved.
        """
        tokens = self.load().get("tokens") or {}
        if tokens.get("refresh_token") != spent and not expiring(tokens):
            log.info("the refresh token was rotated by a peer meanwhile; using its tokens")
            return dict(tokens)
        log.info("the refresh grant was refused (%s); a new login is needed", error)
        return None


def expiring(tokens: dict[str, Any], margin: float = 30.0) -> bool:
    expires_at = tokens.get("expires_at")
    return isinstance(expires_at, (int, float)) and time.time() >= expires_at - margin
