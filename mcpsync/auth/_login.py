"""The authorization-code login's pieces: PKCE and state, the authorization URL, the callback's
checks, pending logins.

Both variants of the browser login in :mod:`mcpsync.auth._flow` use
this module: the loopback one (a local receiver catches the redirect) and the
web-app one (``begin()`` remembers a pending login in the token store under a
key derived from its ``state``; ``complete()`` finds it again from the
callback URL, once).  Every function here takes plain values (metadata, the
client ID, a store and its key) and never a binding, so this module depends on
nothing above it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode, urlsplit

from ._errors import CallbackError, DiscoveryError, IssuerMismatchError, StateMismatchError

if TYPE_CHECKING:  # pragma: no cover
    from ._urlpolicy import UrlPolicy
    from ._stores import TokenStore


#: Seconds a web-app login started by ``begin()`` may take before ``complete()``.
PENDING_TTL = 900.0


def new_verifier() -> str:
    """A 64-character PKCE code verifier (RFC 7636 §4.1 allows 43-128 unreserved characters)."""
    return secrets.token_urlsafe(48)  # 48 random bytes: 384 bits of entropy


def s256_challenge(verifier: str) -> str:
    """``BASE64URL(SHA256(verifier))`` without padding (RFC 7636 §4.2)."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")


def new_state() -> str:
    """An unguessable ``state`` value (256 bits, from :mod:`secrets`)."""
    return secrets.token_urlsafe(32)


def query_params(url: str) -> dict[str, str]:
    """The query parameters of a callback URL (the first value of each)."""
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}


def same_secret(a: str | None, b: str | None) -> bool:
    """Constant-time comparison; ``None`` never matches."""
    return a is not None and b is not None and hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def authorization_url(policy: UrlPolicy, meta: dict[str, Any], client_id: str, redirect_uri: str, state: str,
                      verifier: str, resource: str, scope: str | None) -> str:
    """The URL the user's browser opens to log in (PKCE S256, RFC 8707 ``resource``)."""
    endpoint = meta.get("authorization_endpoint")
    if not isinstance(endpoint, str):
        raise DiscoveryError("authorization server metadata has no authorization_endpoint")
    policy.check(endpoint, "authorization_endpoint")  # F3: no javascript:, file:, ...
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": state,
             "code_challenge": s256_challenge(verifier), "code_challenge_method": "S256", "resource": resource}
    if scope:
        query["scope"] = scope
    if scope and "offline_access" in scope.split():
        query["prompt"] = "consent"  # OIDC: offline_access is granted only with consent
    return endpoint + ("&" if urlsplit(endpoint).query else "?") + urlencode(query)


def check_callback(meta: dict[str, Any], params: Mapping[str, str], state: str) -> str:
    """Check a login response (state, then ``iss``, then errors); its authorization code."""
    if not same_secret(params.get("state"), state):
        raise StateMismatchError("the login response does not belong to the login in progress (state)")
    # RFC 9207: check iss before anything else the response says (mix-up attacks).
    if "iss" in params and params["iss"] != meta["issuer"]:
        raise IssuerMismatchError("the login response came from another authorization server (iss)")
    if "iss" not in params and meta.get("authorization_response_iss_parameter_supported") is True:
        raise IssuerMismatchError("the authorization server promised an iss parameter but sent none")
    if "error" in params:
        code = params["error"][:60]
        raise CallbackError(f"authorization refused: {code}", error=code)
    if not params.get("code"):
        raise CallbackError("the login response has no authorization code")
    return params["code"]


def code_grant(code: str, redirect_uri: str, verifier: str, resource: str) -> dict[str, str]:
    """The token request form that trades an authorization code for tokens (PKCE, RFC 8707)."""
    return {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
            "code_verifier": verifier, "resource": resource}


# -- web-app flow: logins in progress, kept in the token store ---------------------------------


#: Logins in progress kept per user and server; starting one more drops the oldest.
MAX_PENDING = 8


def _state_name(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()[:32]


def _pending_key(key: str) -> str:
    # One record per user and server holds every login in progress: a login the user
    # abandons (closed tab) is dropped when it expires or when newer ones push it out,
    # instead of staying in the store, verifier and all, for good.
    return f"{key}#logins"


def _legacy_pending_key(key: str, state: str) -> str:
    # Where earlier builds kept each login, one record apiece: still read, so a login
    # begun before an upgrade finishes after it.
    return f"{key}#login#{_state_name(state)}"


def _current(logins: Any, now: float) -> dict[str, Any]:
    """The logins in progress that have not expired (malformed entries dropped)."""
    items = logins.items() if isinstance(logins, dict) else ()
    return {name: entry for name, entry in items
            if isinstance(entry, dict) and now - float(entry.get("created", 0)) <= PENDING_TTL}


def save_pending(store: TokenStore, key: str, pending: dict[str, Any]) -> None:
    """Remember a login in progress (``pending["state"]`` names it) for :func:`take_pending`.

    At most :data:`MAX_PENDING` per user and server are kept, none older than :data:`PENDING_TTL`.
    """
    now = time.time()
    record_key = _pending_key(key)
    with store.lock(record_key):  # two tabs starting a login at once must both be kept
        logins = _current((store.load(record_key) or {}).get("logins"), now)
        logins[_state_name(pending["state"])] = {**pending, "created": now}
        newest = sorted(logins.items(), key=lambda item: float(item[1]["created"]))[-MAX_PENDING:]
        store.save(record_key, {"logins": dict(newest)})


def take_pending(store: TokenStore, key: str, callback_url: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The login in progress a callback URL belongs to (removed: one use), and the callback's parameters.

    :raises StateMismatchError: no state, an unknown or replayed one, or a login older than
        :data:`PENDING_TTL`.
    """
    params = query_params(callback_url)
    if not (state := params.get("state")):
        raise StateMismatchError("the callback URL has no state")
    now = time.time()
    record_key = _pending_key(key)
    with store.lock(record_key):
        logins = (store.load(record_key) or {}).get("logins")
        pending = logins.pop(_state_name(state), None) if isinstance(logins, dict) else None
        if pending is not None:  # one-shot: a replayed callback finds nothing
            left = _current(logins, now)
            store.save(record_key, {"logins": left}) if left else store.delete(record_key)
        else:  # under the same lock: two copies of one callback get one verifier
            legacy = _legacy_pending_key(key, state)
            if (pending := store.load(legacy)) is not None:
                store.delete(legacy)
    if not isinstance(pending, dict) or not same_secret(pending.get("state"), state):
        raise StateMismatchError("no login in progress matches this callback (state); start again")
    if now - float(pending.get("created", 0)) > PENDING_TTL:
        raise StateMismatchError("the login took too long; start again")
    return pending, params
