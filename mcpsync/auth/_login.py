"""The authorization-code login: the authorization URL, the callback's checks, web-app logins.

Both variants of :class:`~mcpsync.auth._flow.Authorizer`'s browser login use
this module: the loopback one (a local receiver catches the redirect) and the
web-app one (``begin()`` remembers a pending login in the token store under a
key derived from its ``state``; ``complete()`` finds it again from the
callback URL, once).
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode, urlsplit

from ._errors import (
    CallbackError,
    DiscoveryError,
    IssuerMismatchError,
    RegistrationError,
    StateMismatchError,
)
from ._pkce import new_state, new_verifier, s256_challenge, same_secret

if TYPE_CHECKING:  # pragma: no cover
    from ._discovery import UrlPolicy
    from ._flow import Authorizer

__all__ = ["PENDING_TTL", "authorization_url", "begin", "complete", "exchange", "start"]

#: Seconds a web-app login started by ``begin()`` may take before ``complete()``.
PENDING_TTL = 900.0


def authorization_url(
    policy: UrlPolicy,
    meta: dict[str, Any],
    client: dict[str, Any],
    redirect_uri: str,
    state: str,
    verifier: str,
    resource: str,
    scope: str | None,
) -> str:
    """The URL the user's browser opens to log in (PKCE S256, RFC 8707 ``resource``)."""
    endpoint = meta.get("authorization_endpoint")
    if not isinstance(endpoint, str):
        raise DiscoveryError("authorization server metadata has no authorization_endpoint")
    policy.check(endpoint, "authorization_endpoint")  # F3: no javascript:, file:, ...
    query = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": s256_challenge(verifier),
        "code_challenge_method": "S256",
        "resource": resource,
    }
    if scope:
        query["scope"] = scope
    if scope and "offline_access" in scope.split():
        query["prompt"] = "consent"  # OIDC: offline_access is granted only with consent
    separator = "&" if urlsplit(endpoint).query else "?"
    return endpoint + separator + urlencode(query)


def exchange(
    flow: Authorizer,
    meta: dict[str, Any],
    client: dict[str, Any],
    params: dict[str, str],
    state: str,
    verifier: str,
    redirect_uri: str,
    resource: str,
    scope: str | None,
) -> dict[str, Any]:
    """Check the login response (state, then ``iss``, then errors) and trade its code for tokens."""
    if not same_secret(params.get("state"), state):
        raise StateMismatchError(
            "the login response does not belong to the login in progress (state)"
        )
    # RFC 9207: check iss before anything else the response says (mix-up attacks).
    if "iss" in params:
        if params["iss"] != meta["issuer"]:
            raise IssuerMismatchError(
                "the login response came from another authorization server (iss)"
            )
    elif meta.get("authorization_response_iss_parameter_supported") is True:
        raise IssuerMismatchError("the authorization server promised an iss parameter but sent none")
    if "error" in params:
        code = params["error"][:60]
        raise CallbackError(f"authorization refused: {code}", error=code)
    if not params.get("code"):
        raise CallbackError("the login response has no authorization code")
    data = {
        "grant_type": "authorization_code",
        "code": params["code"],
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "resource": resource,
    }
    tokens = flow._token(meta, client, data)
    if scope and "scope" not in tokens:
        tokens["scope"] = scope
    return tokens


# -- web-app flow ---------------------------------------------------------------------------


def _pending_key(flow: Authorizer, state: str) -> str:
    return f"{flow.key}#login#{hashlib.sha256(state.encode()).hexdigest()[:32]}"


def start(
    flow: Authorizer,
    meta: dict[str, Any],
    record: dict[str, Any],
    resource: str,
    scope: str | None,
) -> str:
    """Register if needed, remember a pending login in the store; the authorization URL."""
    if flow.redirect_uri is None:
        raise RegistrationError("the web-app flow (login=None) needs redirect_uri=")
    client = flow.client_for(meta, record, flow.redirect_uri, scope)
    state, verifier = new_state(), new_verifier()
    pending = {
        "state": state,
        "verifier": verifier,
        "created": time.time(),
        "scope": scope,
        "resource": resource,
        "server_metadata": meta,
        "client": client,
        "resource_metadata": record.get("resource_metadata"),
    }
    flow.store.save(_pending_key(flow, state), pending)
    return authorization_url(
        flow.policy, meta, client, flow.redirect_uri, state, verifier, resource, scope
    )


def begin(flow: Authorizer) -> str:
    """Discover, pick scopes and start a web-app login; the authorization URL."""
    prm, meta, resource = flow.discover({})
    record = flow.load()
    record.update(resource_metadata=prm)
    from ._flow import _join, _scope_set  # _flow imports this module

    granted = _scope_set((record.get("tokens") or {}).get("scope"))
    scopes = flow.select_scopes({}, prm, meta, granted)
    return start(flow, meta, record, resource, _join(scopes))


def complete(flow: Authorizer, callback_url: str) -> dict[str, Any]:
    """Finish the web-app login the callback URL belongs to; the new tokens (saved)."""
    query = parse_qs(urlsplit(callback_url).query, keep_blank_values=True)
    params = {k: v[0] for k, v in query.items()}
    state = params.get("state")
    if not state:
        raise StateMismatchError("the callback URL has no state")
    key = _pending_key(flow, state)
    pending = flow.store.load(key)
    if pending is None or not same_secret(pending.get("state"), state):
        raise StateMismatchError("no login in progress matches this callback (state); start again")
    flow.store.delete(key)  # one-shot: a replayed callback finds nothing
    if time.time() - float(pending.get("created", 0)) > PENDING_TTL:
        raise StateMismatchError("the login took too long; start again")
    meta, client = pending["server_metadata"], pending["client"]
    assert flow.redirect_uri is not None
    tokens = exchange(
        flow,
        meta,
        client,
        params,
        state,
        pending["verifier"],
        flow.redirect_uri,
        pending["resource"],
        pending.get("scope"),
    )
    record = {
        "server_metadata": meta,
        "resource": pending["resource"],
        "resource_metadata": pending.get("resource_metadata"),
    }
    return flow._save(record, meta, client, tokens, pending["resource"])
