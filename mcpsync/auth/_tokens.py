"""Tokens: the token endpoint, the grants, and keeping and refreshing a binding's tokens.

Every token request authenticates the client as its registration says (none,
``client_secret_basic``/``_post`` or ``private_key_jwt``) and, with a DPoP key, carries a
fresh proof.  New tokens are saved in the binding's record before anyone uses them, under
the store's lock, so threads and processes sharing a store spend a rotating refresh token
once (RELIABILITY F6).
"""

from __future__ import annotations

import base64
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..exceptions import excerpt
from ._discovery import origin
from ._dpop import DPoPKey, refuse_nonce_loop
from ._errors import TokenRequestError
from ._http import check_token, post_json
from ._record import Registration, Tokens
from ._registration import registration

if TYPE_CHECKING:  # pragma: no cover
    from ._binding import Binding


log = logging.getLogger("mcpsync.auth")

#: A refused refresh token that a new login (not a retry) may cure.
_DEAD_GRANT = ("invalid_grant", "invalid_client", "unauthorized_client")


def _client_assertion(client: Registration, meta: dict[str, Any], key: Any, algorithm: str | None) -> str:
    try:
        import jwt
    except ImportError:
        raise TokenRequestError("private_key_jwt needs PyJWT with cryptography (pip install 'mcpsync[jwt]')") from None
    if algorithm is None:
        offered = meta.get("token_endpoint_auth_signing_alg_values_supported")
        pem = key.encode() if isinstance(key, str) else key if isinstance(key, bytes) else b""
        guess = "ES256" if b"EC " in pem else "RS256"
        algorithm = offered[0] if isinstance(offered, list) and offered else guess
    now = int(time.time())
    claims = {"iss": client.client_id, "sub": client.client_id, "aud": meta["issuer"],
              "iat": now, "exp": now + 300, "jti": str(uuid.uuid4())}
    return str(jwt.encode(claims, key, algorithm=algorithm))


def _client_auth(binding: Binding, client: Registration, meta: dict[str, Any], data: dict[str, str]
                 ) -> tuple[dict[str, str], dict[str, str]]:
    """The form and headers of one token request, with the client's authentication.

    Built again for every attempt: a ``private_key_jwt`` assertion has a one-time ``jti``.
    """
    form = {**data, "client_id": client.client_id}
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    key, secret = binding.settings.private_key, client.client_secret
    if key is not None:
        form.update(client_assertion_type="urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                    client_assertion=_client_assertion(client, meta, key, binding.settings.signing_algorithm))
    elif secret and client.token_endpoint_auth_method == "client_secret_post":
        form["client_secret"] = secret
    elif secret:
        # RFC 6749 §2.3.1: form-encode both parts before base64.
        del form["client_id"]
        pair = f"{quote(client.client_id, safe='')}:{quote(secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return form, headers


def request(binding: Binding, meta: dict[str, Any], client: Registration, data: dict[str, str], dpop: DPoPKey | None
            ) -> Tokens:
    """POST to the token endpoint with the client's auth method; the tokens it issued.

    They have an absolute ``expires_at`` (or ``None``) and ``scope`` (as requested when
    the answer omits it).  With *dpop*, each attempt carries a fresh DPoP proof; a
    ``use_dpop_nonce`` answer is retried once with the server's nonce (RFC 9449 §8), and
    the nonce is remembered for later requests.

    :raises TokenRequestError: with the OAuth ``error`` code on a refusal.
    :raises DPoPNonceError: the server asked for a new nonce twice in a row.
    """
    endpoint = binding.policy.check(meta["token_endpoint"], "token_endpoint")
    nonces = binding.dpop.nonces
    for attempt in range(2):
        form, headers = _client_auth(binding, client, meta, data)
        used = nonces.get(endpoint)
        if dpop is not None:
            headers["DPoP"] = dpop.proof("POST", endpoint, nonce=used)
        started = time.time()
        response, body = post_json(binding.settings.session, endpoint, "token request", TokenRequestError, data=form,
                                   headers=headers)
        nonce = nonces.update(endpoint, response.headers.get("DPoP-Nonce")) if dpop else None
        if dpop is None or body.get("error") != "use_dpop_nonce":
            break
        refuse_nonce_loop("authorization server", attempt > 0, nonce, used)
        log.debug("the token endpoint wants a DPoP nonce; retrying once with it")
    check_token(response, body, f"token request ({data.get('grant_type')})")
    token_type = str(body.get("token_type", "Bearer"))
    # RFC 9449 §5: a server that ignores the proof issues a bearer token; use it as one.
    if token_type.lower() not in ("bearer", "dpop") or (token_type.lower() == "dpop" and dpop is None):
        raise TokenRequestError(f"token endpoint issued an unsupported token type {excerpt(token_type, 30)}")
    expires_in, refresh_token, scope = body.get("expires_in"), body.get("refresh_token"), body.get("scope")
    dpop = dpop if token_type.lower() == "dpop" else None
    return Tokens(body["access_token"], "DPoP" if dpop else "Bearer",
                  started + float(expires_in) if isinstance(expires_in, (int, float)) else None,
                  refresh_token if isinstance(refresh_token, str) else None,
                  scope if isinstance(scope, str) else data.get("scope"),  # RFC 6749 §5.1: omitted: as requested
                  dpop_jkt=dpop.thumbprint if dpop else None)


def headless_grant(binding: Binding, issuer: str, resource: str, scope: str | None) -> dict[str, str]:
    """The token request form of ``client_credentials`` or an RFC 7523 JWT bearer grant."""
    data = {"grant_type": "client_credentials", "resource": resource}
    assertion = binding.settings.assertion
    if binding.settings.grant_type == "jwt_bearer" and assertion is not None:
        data.update(grant_type="urn:ietf:params:oauth:grant-type:jwt-bearer",
                    assertion=assertion(issuer, resource, scope))
    return {**data, "scope": scope} if scope else data


def keep(binding: Binding, prm: dict[str, Any] | None, meta: dict[str, Any], client: Registration,
         tokens: Tokens, resource: str) -> Tokens:
    """Save new tokens in the binding's record, with what they came from; *tokens*."""
    # Where the tokens may go: their resource; after the 2025-03-26 discovery (no
    # resource metadata: the server's origin is its authorization server) the origin.
    tokens.issuer, tokens.resource, tokens.bound_to = meta["issuer"], resource, resource if prm else origin(binding.canonical)
    with binding.settings.store.lock(binding.key):
        record = binding.load()
        record.server_metadata = meta
        if client.source in ("dcr", "cimd"):
            record.clients[meta["issuer"]] = client
        elif client.source == "preregistered":
            record.client_issuer = meta["issuer"]
        record.tokens = tokens
        binding.save(record)
    return tokens


def refresh(binding: Binding, stale: str | None) -> Tokens | None:
    """Refresh under the store lock; a peer's fresher token wins.  ``None``: no usable grant."""
    with binding.settings.store.lock(binding.key):
        record = binding.load()
        tokens, meta = record.tokens, record.server_metadata
        if tokens is not None and tokens.access_token != stale and not tokens.expiring():
            return tokens  # another thread or process refreshed already
        if tokens is None or not meta:
            return None
        spent = tokens.refresh_token
        # Pre-registered credentials go through their issuer check again.
        client = (registration(binding, meta, record, None) if binding.settings.client is not None
                  else record.clients.get(tokens.issuer or ""))
        # The refresh token if there is one, else a headless grant asks again.
        if client is None or not (spent or binding.settings.grant_type != "authorization_code"):
            return None
        data = ({"grant_type": "refresh_token", "refresh_token": spent, "resource": tokens.resource or ""} if spent
                else headless_grant(binding, meta["issuer"], tokens.resource or "", tokens.scope))
        # A DPoP-bound refresh token is bound to the same key (RFC 9449 §5); bearer
        # tokens stay bearer tokens (the server took them).  (We hold the store lock:
        # the key comes from this record.)
        try:
            new = request(binding, meta, client, data, binding.dpop.of_tokens(tokens, record))
        except TokenRequestError as exc:
            # A refused client-credentials or JWT bearer grant is final: asking
            # again with the same credentials (a new login) cannot help.
            if data["grant_type"] != "refresh_token" or exc.error not in _DEAD_GRANT:
                raise
            return _after_refused_refresh(binding, exc.error, spent)
        new.refresh_token = new.refresh_token or spent
        new.scope = new.scope or tokens.scope
        new.issuer, new.resource, new.bound_to = tokens.issuer, tokens.resource, tokens.bound_to
        record.tokens = new
        # Saved before anyone uses it: the old refresh token may already be spent.
        binding.save(record)
        return new


def _after_refused_refresh(binding: Binding, error: str | None, spent: str | None) -> Tokens | None:
    """The AS refused our refresh token: a peer's rotation, or a dead grant (RELIABILITY F6).

    A peer that does not take our lock (another program, an older version) may have
    rotated the token meanwhile: re-read the store and use its tokens when they changed.
    Otherwise nothing is deleted: the caller logs in again and the new tokens replace the
    dead ones, so a lost race can never wipe credentials a peer just saved.
    """
    tokens = binding.load().tokens
    if tokens and tokens.refresh_token != spent and not tokens.expiring():
        log.info("the refresh token was rotated by a peer meanwhile; using its tokens")
        return tokens
    log.info("the refresh grant was refused (%s); a new login is needed", error)
    return None
