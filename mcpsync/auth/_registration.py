"""Client registration and the token endpoint.

Registration order (MCP 2025-11-25 §Client Registration Approaches):
pre-registered credentials, then a client ID metadata document URL when the
authorization server supports it, then dynamic client registration (RFC 7591).
A registration is bound to the issuer that made it and never shown to another.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..exceptions import excerpt
from ._discovery import UrlPolicy, same_issuer
from ._dpop import DPoPKey, NonceCache
from ._errors import DPoPNonceError, IssuerMismatchError, RegistrationError, TokenRequestError
from ._http import post_json

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["Preregistered", "choose_auth_method", "register_client", "token_request"]

log = logging.getLogger("mcpsync.auth")

_SECRET_METHODS = ("client_secret_basic", "client_secret_post")


class Preregistered:
    """A client registered out of band (``client_id``, maybe a secret) with ONE authorization server.

    Its credentials go to that issuer only: the one given, else the one the token
    store remembers, else the first one seen (which is then remembered).  Metadata
    that names another authorization server later (a compromised or switched MCP
    server) gets :class:`IssuerMismatchError` before anything is sent to it, as a
    dynamically registered client is never shown to another issuer either.
    """

    __slots__ = ("_lock", "client_id", "issuer", "secret")

    def __init__(self, client_id: str, secret: str | None, issuer: str | None) -> None:
        self.client_id = client_id
        self.secret = secret
        #: The issuer the credentials belong to (``None``: not seen yet).
        self.issuer = issuer
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Preregistered client_id={self.client_id!r} issuer={self.issuer!r}>"

    def check(self, issuer: str, stored: str | None) -> None:
        """Allow *issuer* (the authorization server about to get the credentials) or raise.

        :param stored: the issuer a token store record bound them to earlier, if any.
        :raises IssuerMismatchError: *issuer* is another authorization server.
        """
        with self._lock:
            expected = self.issuer or stored
            if expected is None:
                self.issuer = issuer
            elif not same_issuer(expected, issuer):
                raise IssuerMismatchError(
                    "the MCP server now names another authorization server than the one the "
                    "pre-registered client_id belongs to; its credentials are not sent there "
                    "(pass issuer= or a client registered with the new server)"
                )


def choose_auth_method(meta: dict[str, Any], *, has_secret: bool, has_key: bool) -> str:
    """The token endpoint auth method to ask for, from what the server advertises (RFC 8414 §2)."""
    supported = meta.get("token_endpoint_auth_methods_supported")
    # RFC 8414: absent means client_secret_basic only.
    offered = supported if isinstance(supported, list) else ["client_secret_basic"]
    if has_key:
        return "private_key_jwt"
    if has_secret:
        for method in _SECRET_METHODS:
            if method in offered:
                return method
        return "client_secret_basic"
    if "none" in offered or not isinstance(supported, list):
        return "none"
    for method in _SECRET_METHODS:  # the server wants a confidential client: DCR will give us a secret
        if method in offered:
            return method
    return "none"


def register_client(
    session: requests.Session,
    meta: dict[str, Any],
    policy: UrlPolicy,
    *,
    client_name: str,
    redirect_uris: list[str],
    scope: str | None,
    client_metadata_url: str | None,
    native: bool,
    grant_types: list[str],
) -> dict[str, Any]:
    """A client registration for the issuer of *meta* (CIMD when possible, else DCR).

    :raises RegistrationError: when the server offers neither.
    """
    issuer = meta["issuer"]
    if client_metadata_url and meta.get("client_id_metadata_document_supported") is True:
        return {
            "issuer": issuer,
            "client_id": client_metadata_url,
            "token_endpoint_auth_method": "none",
            "redirect_uris": redirect_uris,
            "source": "cimd",
        }
    endpoint = meta.get("registration_endpoint")
    if not isinstance(endpoint, str):
        raise RegistrationError(
            "the authorization server supports no dynamic client registration; pass client_id= "
            "(and client_secret=) registered with it, or client_metadata_url="
        )
    policy.check(endpoint, "registration_endpoint")
    method = choose_auth_method(meta, has_secret=False, has_key=False)
    body: dict[str, Any] = {
        "client_name": client_name,
        "redirect_uris": redirect_uris,
        "grant_types": grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native" if native else "web",
    }
    # No "scope" in the registration: servers treat it as a ceiling, which would
    # make a later step-up to more scopes impossible for this client.
    response, data = post_json(
        session, endpoint, "dynamic client registration: request", RegistrationError, json=body
    )
    status = response.status_code
    if status not in (200, 201) or not isinstance(data.get("client_id"), str):
        code = data.get("error") if isinstance(data.get("error"), str) else None
        raise RegistrationError(
            f"dynamic client registration failed: HTTP {status}" + (f" ({excerpt(code, 60)})" if code else "")
        )
    client: dict[str, Any] = {
        "issuer": issuer,
        "client_id": data["client_id"],
        "token_endpoint_auth_method": data.get("token_endpoint_auth_method")
        or ("client_secret_basic" if data.get("client_secret") else method),
        "redirect_uris": redirect_uris,
        "source": "dcr",
    }
    if isinstance(data.get("client_secret"), str):
        client["client_secret"] = data["client_secret"]
    if isinstance(data.get("client_secret_expires_at"), (int, float)) and data["client_secret_expires_at"]:
        client["client_secret_expires_at"] = data["client_secret_expires_at"]
    log.debug("registered a client with %s by dynamic registration", issuer)
    return client


def _client_assertion(client: dict[str, Any], meta: dict[str, Any], key: Any, algorithm: str | None) -> str:
    try:
        import jwt
    except ImportError:
        raise TokenRequestError(
            "private_key_jwt needs PyJWT with cryptography (pip install 'mcpsync[jwt]')"
        ) from None
    if algorithm is None:
        offered = meta.get("token_endpoint_auth_signing_alg_values_supported")
        pem = key if isinstance(key, (str, bytes)) else b""
        guess = "ES256" if b"EC " in (pem.encode() if isinstance(pem, str) else pem) else "RS256"
        algorithm = offered[0] if isinstance(offered, list) and offered else guess
    now = int(time.time())
    claims = {
        "iss": client["client_id"],
        "sub": client["client_id"],
        "aud": meta["issuer"],
        "iat": now,
        "exp": now + 300,
        "jti": str(uuid.uuid4()),
    }
    return str(jwt.encode(claims, key, algorithm=algorithm))


def _client_auth(
    client: dict[str, Any],
    meta: dict[str, Any],
    data: dict[str, str],
    private_key: Any,
    signing_algorithm: str | None,
) -> tuple[dict[str, str], dict[str, str]]:
    """The form and headers of one token request, with the client's authentication.

    Built again for every attempt: a ``private_key_jwt`` assertion has a
    one-time ``jti``.
    """
    form = dict(data)
    headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
    method = client.get("token_endpoint_auth_method") or "none"
    secret = client.get("client_secret")
    if private_key is not None:
        form["client_id"] = client["client_id"]
        form["client_assertion_type"] = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        form["client_assertion"] = _client_assertion(client, meta, private_key, signing_algorithm)
    elif secret and method == "client_secret_post":
        form["client_id"] = client["client_id"]
        form["client_secret"] = secret
    elif secret:
        # RFC 6749 §2.3.1: form-encode both parts before base64.
        pair = f"{quote(client['client_id'], safe='')}:{quote(secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    else:
        form["client_id"] = client["client_id"]
    return form, headers


def token_request(
    session: requests.Session,
    meta: dict[str, Any],
    client: dict[str, Any],
    data: dict[str, str],
    policy: UrlPolicy,
    *,
    private_key: Any = None,
    signing_algorithm: str | None = None,
    dpop: DPoPKey | None = None,
    nonces: NonceCache | None = None,
) -> dict[str, Any]:
    """POST to the token endpoint with the client's auth method; returns the token record.

    The record has ``access_token``, ``token_type`` (``"Bearer"`` or
    ``"DPoP"``), absolute ``expires_at`` (or ``None``), and ``refresh_token`` /
    ``scope`` when given.  With *dpop*, each attempt carries a fresh DPoP
    proof; a ``use_dpop_nonce`` answer is retried once with the server's nonce
    (RFC 9449 §8), and the nonce is remembered in *nonces* for later requests.

    :raises TokenRequestError: with the OAuth ``error`` code on a refusal.
    :raises DPoPNonceError: the server asked for a new nonce twice in a row.
    """
    endpoint = policy.check(meta["token_endpoint"], "token_endpoint")
    nonces = nonces if nonces is not None else NonceCache()
    for attempt in range(2):
        form, headers = _client_auth(client, meta, data, private_key, signing_algorithm)
        used = nonces.get(endpoint)
        if dpop is not None:
            headers["DPoP"] = dpop.proof("POST", endpoint, nonce=used)
        started = time.time()
        response, body = post_json(
            session, endpoint, "token request", TokenRequestError, data=form, headers=headers
        )
        if dpop is None:
            break
        nonce = nonces.update(endpoint, response.headers.get("DPoP-Nonce"))
        if body.get("error") != "use_dpop_nonce":
            break
        if attempt or nonce is None or nonce == used:
            raise DPoPNonceError(
                "the authorization server asked for a new DPoP nonce again"
                if attempt
                else "the authorization server asked for a DPoP nonce but sent none (or the same)"
            )
        log.debug("the token endpoint wants a DPoP nonce; retrying once with it")
    if response.status_code != 200 or not isinstance(body.get("access_token"), str):
        code = body.get("error") if isinstance(body.get("error"), str) else None
        # error_description is server text: shown only as a short excerpt, never the request.
        raise TokenRequestError(
            f"token request ({data.get('grant_type')}) refused: HTTP {response.status_code}"
            + (f" {excerpt(code, 60)}" if code else ""),
            error=code,
            status=response.status_code,
        )
    token_type = str(body.get("token_type", "Bearer"))
    if token_type.lower() == "dpop" and dpop is not None:
        token_type = "DPoP"
    elif token_type.lower() == "bearer":
        # RFC 9449 §5: a server that ignores the proof issues a bearer token; use it as one.
        token_type = "Bearer"
    else:
        raise TokenRequestError(f"token endpoint issued an unsupported token type {excerpt(token_type, 30)}")
    expires_in = body.get("expires_in")
    tokens: dict[str, Any] = {
        "access_token": body["access_token"],
        "token_type": token_type,
        "expires_at": started + float(expires_in) if isinstance(expires_in, (int, float)) else None,
    }
    if token_type == "DPoP" and dpop is not None:
        tokens["dpop_jkt"] = dpop.thumbprint
    if isinstance(body.get("refresh_token"), str):
        tokens["refresh_token"] = body["refresh_token"]
    if isinstance(body.get("scope"), str):
        tokens["scope"] = body["scope"]
    elif data.get("scope"):
        tokens["scope"] = data["scope"]  # RFC 6749 §5.1: omitted means as requested
    return tokens
