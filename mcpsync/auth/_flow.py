"""The authorization-code and client-credentials flows, without any ``requests`` hook logic.

:class:`Authorizer` runs discovery, registration, the login and the token
requests for one MCP server, and keeps the results in a token store record::

    {"tokens": {...}, "clients": {issuer: {...}}, "resource_metadata": {...},
     "server_metadata": {...}, "resource": "https://..."}

The browser login's own pieces (authorization URL, callback checks, the
web-app flow's pending logins) live in :mod:`mcpsync.auth._login`, which takes
plain values and never this class.  With DPoP (:mod:`mcpsync.auth._dpop`) the
record also holds ``"dpop_key"``, the private key the tokens are bound to.
"""

from __future__ import annotations

import logging
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
from ._dpop import ALGORITHM, INSTALL, DPoPKey, NonceCache, available
from ._errors import (
    AuthorizationRequired,
    DiscoveryError,
    DPoPError,
    RegistrationError,
    TokenRequestError,
)
from ._pkce import new_state, new_verifier
from ._registration import choose_auth_method, register_client, token_request
from ._scopes import join_scopes as _join
from ._scopes import scope_set as _scope_set

if TYPE_CHECKING:  # pragma: no cover
    import requests

    from ._loopback import LoopbackLogin
    from ._stores import TokenStore

__all__ = ["Authorizer"]

log = logging.getLogger("mcpsync.auth")


class Authorizer:
    """Discovery, registration, login and token requests for one MCP server (one store key)."""

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
        client_id: str | None,
        client_secret: str | None,
        client_metadata_url: str | None,
        redirect_uri: str | None,
        grant_type: str,
        private_key: Any,
        signing_algorithm: str | None,
        resolve_hosts: bool,
        assertion: Callable[[str, str, str | None], str] | None = None,
        dpop: bool | None = None,
    ) -> None:
        self.store = store
        self.key = key
        self.server_url = server_url
        self.session = session
        self.login = login
        self.client_name = client_name
        self.scopes = scopes
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_metadata_url = client_metadata_url
        self.redirect_uri = redirect_uri
        self.grant_type = grant_type
        self.private_key = private_key
        self.signing_algorithm = signing_algorithm
        self.assertion = assertion
        self.policy = UrlPolicy(server_url, resolve=resolve_hosts)
        #: ``True``: DPoP or fail; ``False``: bearer tokens only; ``None``: DPoP
        #: where the authorization server offers it and ``cryptography`` is installed.
        self.dpop = dpop
        #: The latest ``DPoP-Nonce`` of each server (authorization and MCP server).
        self.nonces = NonceCache()
        self._dpop_key: DPoPKey | None = None
        self._warned_no_crypto = False

    # -- store helpers --------------------------------------------------------------------

    def load(self) -> dict[str, Any]:
        return self.store.load(self.key) or {}

    # -- DPoP ---------------------------------------------------------------------------------

    def dpop_key(self, record: dict[str, Any] | None = None) -> DPoPKey:
        """This store key's DPoP key: the one in the record (*record*, or loaded), else a new one.

        A new key is saved together with the first tokens bound to it
        (:meth:`_keep_key`), never alone: the store lock is not re-entrant
        and a key without tokens is of no use to anyone.
        """
        if self._dpop_key is None:
            stored = (record if record is not None else self.load()).get("dpop_key")
            self._dpop_key = (
                DPoPKey.from_jwk(stored) if stored is not None else DPoPKey.generate()
            )
        return self._dpop_key

    def forget_dpop_key(self) -> None:
        """After a logout: the next login binds its tokens to a new key."""
        self._dpop_key = None

    def _keep_key(self, record: dict[str, Any], tokens: dict[str, Any]) -> None:
        """Put the key *tokens* are bound to into *record*, which is about to be saved with them."""
        key = self._dpop_key
        if tokens.get("token_type") == "DPoP" and key and tokens.get("dpop_jkt") == key.thumbprint:
            record["dpop_key"] = key.private_jwk()

    def dpop_for(
        self,
        meta: dict[str, Any],
        prm: dict[str, Any] | None,
        record: dict[str, Any] | None = None,
    ) -> DPoPKey | None:
        """The key to bind new tokens to, or ``None`` for bearer tokens.

        :raises DPoPError: DPoP is required (``dpop=True`` or the resource's
            ``dpop_bound_access_tokens_required``) but impossible.
        """
        if self.dpop is False:
            return None
        algs = meta.get("dpop_signing_alg_values_supported")
        required = bool(prm) and (prm or {}).get("dpop_bound_access_tokens_required") is True
        if self.dpop is None and not required and not isinstance(algs, list):
            return None
        if isinstance(algs, list) and ALGORITHM not in algs:
            if self.dpop or required:
                raise DPoPError(
                    f"the authorization server accepts no {ALGORITHM} DPoP proofs, "
                    "the only kind mcpsync signs"
                )
            return None
        if self.dpop is None and not required and not available():
            if not self._warned_no_crypto:
                self._warned_no_crypto = True
                log.warning(
                    "the authorization server offers DPoP but the cryptography package is "
                    "missing; using bearer tokens (%s)",
                    INSTALL,
                )
            return None
        return self.dpop_key(record)

    def tokens_key(
        self, tokens: dict[str, Any], record: dict[str, Any] | None = None
    ) -> DPoPKey | None:
        """The key *tokens* are bound to (``None`` for bearer tokens)."""
        if tokens.get("token_type") != "DPoP":
            return None
        jkt = tokens.get("dpop_jkt")
        key = self.dpop_key(record)
        if jkt not in (None, key.thumbprint):
            # Another process bound newer tokens to its own key and saved both: use that key.
            stored = (record if record is not None else self.load()).get("dpop_key")
            if stored is not None:
                key = DPoPKey.from_jwk(stored)
            if key.thumbprint != jkt:
                raise DPoPError(
                    "the stored tokens are bound to another DPoP key than the stored one; "
                    "log in again"
                )
            self._dpop_key = key
        return key

    # -- discovery ----------------------------------------------------------------------------

    def discover(
        self, challenge: dict[str, str]
    ) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
        """(resource metadata or None, validated server metadata, resource indicator)."""
        prm = discover_resource_metadata(
            self.session,
            self.server_url,
            self.policy,
            challenge.get("resource_metadata"),
        )
        if prm is None:
            log.debug("no protected resource metadata: using the 2025-03-26 discovery")
            return (
                None,
                legacy_server_metadata(self.session, self.server_url, self.policy),
                canonical_resource(self.server_url),
            )
        issuer = prm["authorization_servers"][0]
        self.policy.check(issuer, "authorization server")
        meta = discover_server_metadata(self.session, issuer, self.policy)
        if meta is None:
            raise DiscoveryError(
                "the authorization server publishes no metadata (RFC 8414 / OpenID Connect)"
            )
        return prm, meta, str(prm["resource"])

    def select_scopes(
        self,
        challenge: dict[str, str],
        prm: dict[str, Any] | None,
        meta: dict[str, Any],
        granted: set[str],
    ) -> set[str]:
        """MCP §Scope Selection Strategy: the challenge's ``scope``, else the PRM's ``scopes_supported``."""
        if "scope" in challenge:
            wanted = _scope_set(challenge["scope"])
        else:
            wanted = _scope_set((prm or {}).get("scopes_supported"))
        wanted |= self.scopes | granted  # step-up keeps what we had (union)
        offered = _scope_set(meta.get("scopes_supported"))
        # SEP-2207: ask for a refresh token only where the server lists offline_access.
        if (
            wanted
            and "offline_access" in offered
            and self.grant_type == "authorization_code"
        ):
            wanted.add("offline_access")
        return wanted

    # -- registration ---------------------------------------------------------------------

    def client_for(
        self,
        meta: dict[str, Any],
        record: dict[str, Any],
        redirect_uri: str | None,
        scope: str | None,
    ) -> dict[str, Any]:
        issuer = meta["issuer"]
        if self.client_id is not None:
            has_key = self.private_key is not None
            method = choose_auth_method(
                meta, has_secret=bool(self.client_secret), has_key=has_key
            )
            client: dict[str, Any] = {
                "issuer": issuer,
                "client_id": self.client_id,
                "token_endpoint_auth_method": method,
                "source": "preregistered",
            }
            if self.client_secret:
                client["client_secret"] = self.client_secret
            return client
        if self.grant_type != "authorization_code":
            raise RegistrationError(
                f"{self.grant_type} needs a pre-registered client_id"
            )
        stored = (record.get("clients") or {}).get(issuer)
        expired = (
            stored
            and stored.get("client_secret_expires_at")
            and stored["client_secret_expires_at"] < time.time()
        )
        if (
            stored
            and stored.get("issuer") == issuer
            and not expired
            and (
                redirect_uri is None or redirect_uri in stored.get("redirect_uris", [])
            )
        ):
            return dict(stored)
        assert redirect_uri is not None
        return register_client(
            self.session,
            meta,
            self.policy,
            client_name=self.client_name,
            redirect_uris=[redirect_uri],
            scope=scope,
            client_metadata_url=self.client_metadata_url,
            native=self.login is not None,
            grant_types=["authorization_code", "refresh_token"],
        )

    # -- flows ------------------------------------------------------------------------------

    def authorize(self, challenge: dict[str, str], granted: set[str]) -> dict[str, Any]:
        """Run discovery and a full authorization; returns the new tokens (saved).

        :raises AuthorizationRequired: in the web-app flow (``login=None``).
        """
        prm, meta, resource = self.discover(challenge)
        record = self.load()
        dpop = self.dpop_for(meta, prm, record)
        record.update(resource_metadata=prm, server_metadata=meta, resource=resource)
        scopes = self.select_scopes(challenge, prm, meta, granted)
        scope = _join(scopes)
        if self.grant_type != "authorization_code":
            client = self.client_for(meta, record, None, scope)
            tokens = self._token(
                meta, client, self._headless_grant(meta["issuer"], resource, scope), dpop
            )
            return self._save(record, meta, client, tokens, resource)
        if self.login is None:
            raise AuthorizationRequired(self.start(meta, record, resource, scope))
        registered = ((record.get("clients") or {}).get(meta["issuer"]) or {}).get(
            "redirect_uris"
        ) or [""]
        preferred = (
            urlsplit(registered[0]).port
            if registered[0].startswith("http://127.0.0.1:")
            else None
        )
        with self.login.receiver(preferred) as receiver:
            client = self.client_for(meta, record, receiver.redirect_uri, scope)
            record.setdefault("clients", {})[meta["issuer"]] = client
            state, verifier = new_state(), new_verifier()
            url = _login.authorization_url(
                self.policy, meta, client, receiver.redirect_uri, state, verifier, resource, scope
            )
            receiver.state = state  # before the browser: a fast callback must find it
            log.info(
                "opening the browser to log in at %s", urlsplit(meta["issuer"]).netloc
            )
            # The one exception to the call's deadline: a person at a browser has the
            # login's own timeout, and what they achieved is exchanged and saved even
            # when the call that needed it has run out of time meanwhile.
            with _deadline.suspended():
                self.login.open(url)
                params = receiver.wait(state, self.login.timeout)
        with _deadline.suspended():
            tokens = self._exchange(
                meta, client, params, state, verifier, receiver.redirect_uri, resource, scope, dpop
            )
            return self._save(record, meta, client, tokens, resource)

    def _exchange(
        self,
        meta: dict[str, Any],
        client: dict[str, Any],
        params: dict[str, str],
        state: str,
        verifier: str,
        redirect_uri: str,
        resource: str,
        scope: str | None,
        dpop: DPoPKey | None,
    ) -> dict[str, Any]:
        """Check the login response and trade its code for tokens."""
        code = _login.check_callback(meta, params, state)
        data = _login.code_grant(code, redirect_uri, verifier, resource)
        tokens = self._token(meta, client, data, dpop)
        if scope and "scope" not in tokens:
            tokens["scope"] = scope
        return tokens

    def _headless_grant(
        self, issuer: str, resource: str, scope: str | None
    ) -> dict[str, str]:
        """The token request form of ``client_credentials`` or an RFC 7523 JWT bearer grant."""
        if self.grant_type == "jwt_bearer":
            if self.assertion is None:
                raise RegistrationError("grant_type='jwt_bearer' needs assertion=")
            data = {
                "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                "assertion": self.assertion(issuer, resource, scope),
                "resource": resource,
            }
        else:
            data = {"grant_type": "client_credentials", "resource": resource}
        if scope:
            data["scope"] = scope
        return data

    def _token(
        self,
        meta: dict[str, Any],
        client: dict[str, Any],
        data: dict[str, str],
        dpop: DPoPKey | None,
    ) -> dict[str, Any]:
        return token_request(
            self.session,
            meta,
            client,
            data,
            self.policy,
            private_key=self.private_key,
            signing_algorithm=self.signing_algorithm,
            dpop=dpop,
            nonces=self.nonces,
        )

    def _save(
        self,
        record: dict[str, Any],
        meta: dict[str, Any],
        client: dict[str, Any],
        tokens: dict[str, Any],
        resource: str,
    ) -> dict[str, Any]:
        tokens.update(issuer=meta["issuer"], resource=resource)
        with self.store.lock(self.key):
            current = self.load()
            current.update({k: v for k, v in record.items() if k != "tokens"})
            current.setdefault("clients", {})
            if client.get("source") in ("dcr", "cimd"):
                current["clients"][meta["issuer"]] = client
            current["tokens"] = tokens
            self._keep_key(current, tokens)
            self.store.save(self.key, current)
        return tokens

    # -- web-app flow ------------------------------------------------------------------------

    def start(
        self, meta: dict[str, Any], record: dict[str, Any], resource: str, scope: str | None
    ) -> str:
        """Register if needed, remember a pending login in the store; the authorization URL."""
        if self.redirect_uri is None:
            raise RegistrationError("the web-app flow (login=None) needs redirect_uri=")
        client = self.client_for(meta, record, self.redirect_uri, scope)
        state, verifier = new_state(), new_verifier()
        _login.save_pending(
            self.store,
            self.key,
            {
                "state": state,
                "verifier": verifier,
                "scope": scope,
                "resource": resource,
                "server_metadata": meta,
                "client": client,
                "resource_metadata": record.get("resource_metadata"),
            },
        )
        return _login.authorization_url(
            self.policy, meta, client, self.redirect_uri, state, verifier, resource, scope
        )

    def begin(self) -> str:
        """Discover, pick scopes and start a web-app login; the authorization URL."""
        prm, meta, resource = self.discover({})
        record = self.load()
        record.update(resource_metadata=prm)
        granted = _scope_set((record.get("tokens") or {}).get("scope"))
        scopes = self.select_scopes({}, prm, meta, granted)
        return self.start(meta, record, resource, _join(scopes))

    def complete(self, callback_url: str) -> dict[str, Any]:
        """Finish the web-app login the callback URL belongs to; the new tokens (saved)."""
        pending, params = _login.take_pending(self.store, self.key, callback_url)
        meta, client = pending["server_metadata"], pending["client"]
        prm = pending.get("resource_metadata")
        assert self.redirect_uri is not None
        tokens = self._exchange(
            meta,
            client,
            params,
            pending["state"],
            pending["verifier"],
            self.redirect_uri,
            pending["resource"],
            pending.get("scope"),
            self.dpop_for(meta, prm),
        )
        record = {
            "server_metadata": meta,
            "resource": pending["resource"],
            "resource_metadata": prm,
        }
        return self._save(record, meta, client, tokens, pending["resource"])

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
            client = (record.get("clients") or {}).get(tokens.get("issuer"))
            if client is None and self.client_id is not None and meta:
                client = self.client_for(meta, record, None, None)
            if (
                self.grant_type != "authorization_code"
                and meta
                and client
                and not refresh_token
            ):
                data = self._headless_grant(
                    meta["issuer"], tokens.get("resource", ""), tokens.get("scope")
                )
            elif refresh_token and meta and client:
                data = {
                    "grant_type": "refresh_token",
                    "refresh_token": refresh_token,
                    "resource": tokens.get("resource", ""),
                }
            else:
                return None
            # A DPoP-bound refresh token is bound to the same key (RFC 9449 §5).
            # (We hold the store lock: the key comes from, or goes into, this record.)
            dpop = self.tokens_key(tokens, record) or self.dpop_for(
                meta, record.get("resource_metadata"), record
            )
            try:
                new = self._token(meta, client, data, dpop)
            except TokenRequestError as exc:
                # A refused client-credentials or JWT bearer grant is final: asking
                # again with the same credentials (a new login) cannot help.
                if data["grant_type"] != "refresh_token" or exc.error not in (
                    "invalid_grant",
                    "invalid_client",
                    "unauthorized_client",
                ):
                    raise
                return self._after_refused_refresh(exc.error, refresh_token)
            new.setdefault("refresh_token", refresh_token) if refresh_token else None
            new.setdefault("scope", tokens.get("scope"))
            new.update(issuer=tokens.get("issuer"), resource=tokens.get("resource"))
            record["tokens"] = new
            self._keep_key(record, new)
            # Saved before anyone uses it: the old refresh token may already be spent.
            self.store.save(self.key, record)
            return new

    def _after_refused_refresh(
        self, error: str | None, spent: str | None
    ) -> dict[str, Any] | None:
        """The AS refused our refresh token: a peer's rotation, or a dead grant (RELIABILITY F6).

        A peer that does not take our lock (another program, an older
        version) may have rotated the token meanwhile: re-read the store and
        use its tokens when they changed.  Otherwise nothing is deleted: the
        caller logs in again and the new tokens replace the dead ones, so a
        lost race can never wipe credentials a peer just saved.
        """
        tokens = self.load().get("tokens") or {}
        if tokens.get("refresh_token") != spent and not expiring(tokens):
            log.info(
                "the refresh token was rotated by a peer meanwhile; using its tokens"
            )
            return dict(tokens)
        log.info("the refresh grant was refused (%s); a new login is needed", error)
        return None


def expiring(tokens: dict[str, Any], margin: float = 30.0) -> bool:
    expires_at = tokens.get("expires_at")
    return isinstance(expires_at, (int, float)) and time.time() >= expires_at - margin
