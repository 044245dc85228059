"""Client registration: which client a binding uses with an authorization server.

Registration order (MCP 2025-11-25 §Client Registration Approaches):
pre-registered credentials, then a client ID metadata document URL when the
authorization server supports it, then dynamic client registration (RFC 7591).
A registration is bound to the issuer that made it and never shown to another.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ..exceptions import excerpt
from ._errors import RegistrationError
from ._http import error_code, post_json
from ._record import Record, Registration

if TYPE_CHECKING:  # pragma: no cover
    from ._binding import Binding


log = logging.getLogger("mcpsync.auth")

_SECRET_METHODS = ("client_secret_basic", "client_secret_post")


def choose_auth_method(meta: dict[str, Any], *, has_secret: bool, has_key: bool) -> str:
    """The token endpoint auth method to ask for, from what the server advertises (RFC 8414 §2)."""
    supported = meta.get("token_endpoint_auth_methods_supported")
    # RFC 8414: absent means client_secret_basic only.
    offered = supported if isinstance(supported, list) else ["client_secret_basic"]
    if has_key:
        return "private_key_jwt"
    if not has_secret and ("none" in offered or not isinstance(supported, list)):
        return "none"
    # A secret, or a server that wants a confidential client (DCR will give us a secret).
    return next((m for m in _SECRET_METHODS if m in offered), "client_secret_basic" if has_secret else "none")


def registration(binding: Binding, meta: dict[str, Any], record: Record, redirect_uri: str | None) -> Registration:
    """The client registration to use with the issuer of *meta* (registered now if needed).

    :raises IssuerMismatchError: pre-registered credentials that belong to another issuer.
    :raises RegistrationError: none can be had.
    """
    issuer, settings = meta["issuer"], binding.settings
    if (client := settings.client) is not None:
        client.check(issuer, record.client_issuer)
        method = choose_auth_method(meta, has_secret=bool(client.secret), has_key=settings.private_key is not None)
        return Registration(issuer, client.client_id, method, "preregistered", client_secret=client.secret or None)
    if settings.grant_type != "authorization_code":
        raise RegistrationError(f"{settings.grant_type} needs a pre-registered client_id")
    stored = record.clients.get(issuer)
    if (stored and stored.issuer == issuer
            and not (stored.client_secret_expires_at and stored.client_secret_expires_at < time.time())
            and (redirect_uri is None or redirect_uri in stored.redirect_uris)):
        return stored
    assert redirect_uri is not None
    if settings.client_metadata_url and meta.get("client_id_metadata_document_supported") is True:
        return Registration(issuer, settings.client_metadata_url, "none", "cimd", [redirect_uri])
    return _register(binding, meta, redirect_uri)


def _register(binding: Binding, meta: dict[str, Any], redirect_uri: str) -> Registration:
    """Dynamic client registration (RFC 7591) with the issuer of *meta*."""
    endpoint = meta.get("registration_endpoint")
    if not isinstance(endpoint, str):
        raise RegistrationError("the authorization server supports no dynamic client registration; pass client_id= "
                                "(and client_secret=) registered with it, or client_metadata_url=")
    binding.policy.check(endpoint, "registration_endpoint")
    method = choose_auth_method(meta, has_secret=False, has_key=False)
    body = {"client_name": binding.settings.client_name, "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": "native" if binding.settings.login is not None else "web"}
    # No "scope" in the registration: servers treat it as a ceiling, which would
    # make a later step-up to more scopes impossible for this client.
    response, data = post_json(binding.settings.session, endpoint, "dynamic client registration: request",
                               RegistrationError, json=body)
    status, client_id, secret = response.status_code, data.get("client_id"), data.get("client_secret")
    if status not in (200, 201) or not isinstance(client_id, str):
        code = error_code(data)
        raise RegistrationError(f"dynamic client registration failed: HTTP {status}"
                                + (f" ({excerpt(code, 60)})" if code else ""))
    expires = data.get("client_secret_expires_at")
    log.debug("registered a client with %s by dynamic registration", meta["issuer"])
    return Registration(meta["issuer"], client_id, data.get("token_endpoint_auth_method")
                        or ("client_secret_basic" if secret else method), "dcr", [redirect_uri],
                        client_secret=secret if isinstance(secret, str) else None,
                        client_secret_expires_at=expires if isinstance(expires, (int, float)) and expires else None)
