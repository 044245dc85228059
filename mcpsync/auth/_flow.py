"""The flow: discovery, scopes, then a login (loopback or web app) or a headless grant.

Functions over a :class:`~._binding.Binding`: :func:`authorize` runs a whole
authorization when a server asks for one; :func:`begin` and :func:`complete` are the
web-app flow's two halves.  Registration is :mod:`._registration`, the token requests
and saving the tokens :mod:`._tokens`; the browser login's own pieces (authorization
URL, callback checks, pending logins) :mod:`._login`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import _deadline, _login, _tokens
from ._discovery import discover_resource_metadata, discover_server_metadata, legacy_server_metadata
from ._errors import AuthorizationRequired, DiscoveryError, RegistrationError
from ._record import Record, Registration, Tokens, join_scopes, parse, scope_set, to_json
from ._registration import registration

if TYPE_CHECKING:  # pragma: no cover
    from ._binding import Binding
    from ._dpop import DPoPKey


log = logging.getLogger("mcpsync.auth")


def discover(binding: Binding, challenge: dict[str, str]) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
    """(resource metadata or None, validated server metadata, resource indicator)."""
    session, url, policy = binding.settings.session, binding.server_url, binding.policy
    prm = discover_resource_metadata(session, url, policy, challenge.get("resource_metadata"),
                                     prefix=binding.settings.resource_prefix)
    if prm is None:
        log.debug("no protected resource metadata: using the 2025-03-26 discovery")
        return None, legacy_server_metadata(session, url, policy), binding.canonical
    issuer = prm["authorization_servers"][0]
    policy.check(issuer, "authorization server")
    if (meta := discover_server_metadata(session, issuer, policy)) is None:
        raise DiscoveryError("the authorization server publishes no metadata (RFC 8414 / OpenID Connect)")
    return prm, meta, str(prm["resource"])


def _scope(binding: Binding, challenge: dict[str, str], prm: dict[str, Any] | None, meta: dict[str, Any],
           granted: set[str]) -> str | None:
    """MCP §Scope Selection Strategy: the challenge's ``scope``, else the PRM's ``scopes_supported``."""
    wanted = scope_set(challenge["scope"] if "scope" in challenge else (prm or {}).get("scopes_supported"))
    wanted |= binding.settings.scopes | granted  # step-up keeps what we had (union)
    # SEP-2207: ask for a refresh token only where the server lists offline_access.
    if (wanted and "offline_access" in scope_set(meta.get("scopes_supported"))
            and binding.settings.grant_type == "authorization_code"):
        wanted.add("offline_access")
    return join_scopes(wanted)


def authorize(binding: Binding, challenge: dict[str, str], granted: set[str], *, dpop_offered: bool = False) -> Tokens:
    """Run discovery and a full authorization; the new tokens (saved).

    :param dpop_offered: the MCP server's challenge included ``DPoP`` (it takes DPoP-bound tokens).
    :raises AuthorizationRequired: in the web-app flow (``login=None``).
    """
    prm, meta, resource = discover(binding, challenge)
    record, settings = binding.load(), binding.settings
    dpop = binding.dpop.for_new_tokens(meta, prm, record, offered=dpop_offered)
    scope = _scope(binding, challenge, prm, meta, granted)
    if settings.grant_type != "authorization_code":
        client = registration(binding, meta, record, None)
        tokens = _tokens.request(binding, meta, client, _tokens.headless_grant(binding, meta["issuer"], resource, scope),
                                 dpop)
        return _tokens.keep(binding, prm, meta, client, tokens, resource)
    if (login := settings.login) is None:
        raise AuthorizationRequired(_start(binding, prm, meta, record, resource, scope, dpop_offered))
    stored = record.clients.get(meta["issuer"])
    registered = (stored.redirect_uris if stored else None) or [""]
    preferred = urlsplit(registered[0]).port if registered[0].startswith("http://127.0.0.1:") else None
    with login.receiver(preferred) as receiver:
        attempt, url = _attempt(binding, prm, meta, record, receiver.redirect_uri, resource, scope)
        receiver.state = state = attempt["state"]  # before the browser: a fast callback must find it
        log.info("opening the browser to log in at %s", urlsplit(meta["issuer"]).netloc)
        # The one exception to the call's deadline: a person at a browser has the
        # login's own timeout, and what they achieved is exchanged and saved even
        # when the call that needed it has run out of time meanwhile.
        with _deadline.suspended():
            login.open(url)
            params = receiver.wait(state, login.timeout)
    with _deadline.suspended():
        return _exchange(binding, attempt, params, receiver.redirect_uri, dpop)


def _attempt(binding: Binding, prm: dict[str, Any] | None, meta: dict[str, Any], record: Record, redirect_uri: str,
             resource: str, scope: str | None, **extra: Any) -> tuple[dict[str, Any], str]:
    """Register if needed and start a login: what finishing it needs (as the web-app flow keeps it in
    the store: new ``state`` and PKCE ``verifier`` among it), and the authorization URL."""
    client = registration(binding, meta, record, redirect_uri)
    attempt = {"state": _login.new_state(), "verifier": _login.new_verifier(), "scope": scope, "resource": resource,
               "server_metadata": meta, "client": client, "resource_metadata": prm, **extra}
    return attempt, _login.authorization_url(binding.policy, meta, client.client_id, redirect_uri, attempt["state"],
                                             attempt["verifier"], resource, scope)


def _exchange(binding: Binding, attempt: dict[str, Any], params: dict[str, str], redirect_uri: str,
              dpop: DPoPKey | None) -> Tokens:
    """Check the login response to *attempt*, trade its code for tokens and save them."""
    meta, resource, client = attempt["server_metadata"], attempt["resource"], attempt["client"]
    code = _login.check_callback(meta, params, attempt["state"])
    grant = _login.code_grant(code, redirect_uri, attempt["verifier"], resource)
    tokens = _tokens.request(binding, meta, client, grant, dpop)
    tokens.scope = tokens.scope or attempt.get("scope")
    return _tokens.keep(binding, attempt.get("resource_metadata"), meta, client, tokens, resource)


def _start(binding: Binding, prm: dict[str, Any] | None, meta: dict[str, Any], record: Record, resource: str,
           scope: str | None, dpop_offered: bool = False) -> str:
    """Register if needed, remember a pending login in the store; the authorization URL."""
    if (redirect_uri := binding.settings.redirect_uri) is None:
        raise RegistrationError("the web-app flow (login=None) needs redirect_uri=")
    attempt, url = _attempt(binding, prm, meta, record, redirect_uri, resource, scope, dpop_offered=dpop_offered)
    _login.save_pending(binding.settings.store, binding.key, to_json(attempt))
    return url


def begin(binding: Binding) -> str:
    """Discover, pick scopes and start a web-app login; the authorization URL."""
    prm, meta, resource = discover(binding, {})
    record = binding.load()
    granted = scope_set(record.tokens and record.tokens.scope)
    return _start(binding, prm, meta, record, resource, _scope(binding, {}, prm, meta, granted))


def complete(binding: Binding, callback_url: str) -> Tokens:
    """Finish the web-app login the callback URL belongs to; the new tokens (saved)."""
    pending, params = _login.take_pending(binding.settings.store, binding.key, callback_url)
    pending["client"] = parse(Registration, pending.get("client"))
    assert binding.settings.redirect_uri is not None
    dpop = binding.dpop.for_new_tokens(pending["server_metadata"], pending.get("resource_metadata"),
                                       offered=pending.get("dpop_offered") is True)
    return _exchange(binding, pending, params, binding.settings.redirect_uri, dpop)
