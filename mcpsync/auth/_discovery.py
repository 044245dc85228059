"""Discovery: ``WWW-Authenticate``, RFC 9728 resource metadata, RFC 8414 / OIDC server metadata.

Every URL a server hands us goes through :class:`UrlPolicy` before we connect
to it (RELIABILITY F2): https only (plain http only to a loopback host when the
MCP server itself is on loopback), and no loopback, private or link-local
address unless the MCP server lives there too.  Redirects are followed by hand,
at most three, each hop checked again.  Fetched bodies are size-capped and
never echoed into errors.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests

from ._errors import DiscoveryError, IssuerMismatchError, PKCENotSupportedError, ResourceMismatchError
from ._http import MAX_JSON_BYTES, json_object, send
from ._urlpolicy import UrlPolicy


log = logging.getLogger("mcpsync.auth")

MAX_REDIRECTS = 3

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
#: One element of a ``WWW-Authenticate`` value: ``name=value`` (quoted or not), or a scheme
#: (with its token68, if any).  Commas and spaces between elements match neither.
_ELEMENT = re.compile(
    rf'({_TOKEN})\s*=\s*("(?:[^"\\]|\\.)*"|[^,]*)|({_TOKEN})(?:\s+[\w.~+/-]+=*(?=\s*(?:,|$)))?'
)


def _unquote(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value[1:-1]) if len(value) >= 2 and value[0] == value[-1] == '"' else value


def parse_challenges(header: str | None) -> list[tuple[str, dict[str, str]]]:
    """Every challenge in a ``WWW-Authenticate`` value: ``(scheme lower-cased, params)`` (RFC 9110 §11.6.1).

    Handles several challenges in one header (``Basic realm="x", Bearer
    scope="a b"``), quoted strings with escapes and commas inside quotes, and
    token68 values.  Parameter names are lower-cased; the first occurrence wins.
    """
    challenges: list[tuple[str, dict[str, str]]] = []
    for name, value, scheme in _ELEMENT.findall(header or ""):
        if scheme:
            challenges.append((scheme.lower(), {}))
        elif challenges:
            challenges[-1][1].setdefault(name.lower(), _unquote(value.strip()))
    return challenges


def parse_www_authenticate(header: str | None) -> dict[str, str]:
    """The parameters of the ``Bearer`` challenge, else of the ``DPoP`` one (RFC 9449 §7.1).

    A server that accepts only DPoP-bound tokens challenges with ``DPoP
    resource_metadata=...``; its parameters drive discovery and scope
    selection exactly like a Bearer challenge's.  Neither: ``{}``.
    """
    challenges = dict(reversed(parse_challenges(header)))  # reversed: the first of a scheme wins
    return challenges.get("bearer", challenges.get("dpop", {}))


def offers_dpop(header: str | None) -> bool:
    """Whether a ``WWW-Authenticate`` value has a ``DPoP`` challenge (RFC 9449 §7.1: DPoP-bound tokens taken)."""
    return any(scheme == "dpop" for scheme, _ in parse_challenges(header))


def wants_dpop_nonce(header: str | None) -> bool:
    """Whether a ``WWW-Authenticate`` value asks for a DPoP proof with a new nonce (RFC 9449 §9)."""
    return any(scheme == "dpop" and p.get("error") == "use_dpop_nonce" for scheme, p in parse_challenges(header))


def origin(url: str) -> str:
    """``scheme://host[:port]`` of *url*, lower-cased (both are case-insensitive, RFC 3986 §6.2.2.1)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def canonical_resource(url: str) -> str:
    """The canonical resource URI of an MCP server URL (RFC 8707 / MCP §Resource Parameter).

    Lower-case scheme and host, no fragment, no query, no trailing slash
    unless the path is empty.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    if parts.port and parts.port != {"http": 80, "https": 443}.get(parts.scheme.lower()):
        host += f":{parts.port}"
    return urlunsplit((parts.scheme.lower(), host, parts.path.rstrip("/"), "", ""))


def within(url: str, resource: str) -> bool:
    """Whether *url* lies in *resource* (RFC 8707): same origin, and the resource's path or below it."""
    res, target = canonical_resource(resource), canonical_resource(url)
    return origin(res) == origin(target) and (target == res or target.startswith(res + "/"))


#: The path of an origin's own RFC 9728 metadata document (no resource path inserted).
ROOT_METADATA = "/.well-known/oauth-protected-resource"


def resource_matches(resource: str, server_url: str, metadata_url: str | None = None, *, prefix: bool = False) -> bool:
    """Whether metadata naming *resource* may be used for *server_url* (RFC 9728 §3.3).

    The resource must be the server's own URL (in canonical form), or its origin when the
    document is the origin's own (the root well-known URL, which the owner of the origin
    alone serves).  Any other resource that contains the server URL only with *prefix*
    (an opt-in): a server at ``/mcp`` must not get a token for the whole origin.
    """
    res, srv = canonical_resource(resource), canonical_resource(server_url)
    root = res == origin(srv) and canonical_resource(metadata_url or "") == origin(srv) + ROOT_METADATA
    return res == srv or root or (prefix and within(server_url, resource))


def fetch_json(session: requests.Session, url: str, policy: UrlPolicy, what: str) -> dict[str, Any] | None:
    """GET *url* as JSON, following redirects under *policy*: ``None`` on 4xx (try the next
    location), the object on 200.

    :raises DiscoveryError: on 5xx, a body that is not a JSON object, or a too-large body.
    """
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        policy.check(current, what)
        response, body = send(session, "GET", current, what, DiscoveryError)
        status = response.status_code
        if status in (301, 302, 303, 307, 308) and "Location" in response.headers:
            current = urljoin(current, response.headers["Location"])
            continue
        if 400 <= status < 500:
            return None
        if status != 200:
            raise DiscoveryError(f"{what}: HTTP {status} from {_safe(current)}")
        if len(body) > MAX_JSON_BYTES:
            raise DiscoveryError(f"{what}: document larger than {MAX_JSON_BYTES} bytes")
        if (data := json_object(body)) is None:
            raise DiscoveryError(f"{what}: {_safe(current)} did not return a JSON object")
        return data
    raise DiscoveryError(f"{what}: more than {MAX_REDIRECTS} redirects")


def _safe(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", ""))


def _well_known(url: str, suffix: str, *, insert: bool = True) -> str:
    path = urlsplit(url).path.rstrip("/")
    return origin(url) + (f"/.well-known/{suffix}{path}" if insert else f"{path}/.well-known/{suffix}")


def _first(session: requests.Session, urls: list[str | None], policy: UrlPolicy, what: str
           ) -> tuple[str, dict[str, Any]] | None:
    """The first of *urls* (each tried once, ``None`` skipped) that has a document, and the document."""
    for url in dict.fromkeys(filter(None, urls)):
        if (doc := fetch_json(session, url, policy, what)) is not None:
            return url, doc
    return None


def discover_resource_metadata(session: requests.Session, server_url: str, policy: UrlPolicy, header_url: str | None, *,
                               prefix: bool = False) -> dict[str, Any] | None:
    """RFC 9728 metadata: the header's URL, then the path-based, then the root well-known URL.

    ``None`` when the server publishes none (a 2025-03-26 server).

    :param prefix: accept a ``resource`` that merely contains the server URL (see
        :func:`resource_matches`).
    :raises ResourceMismatchError: when the document's ``resource`` is not this server.
    """
    # Without a path, the path-based URL is the root one (tried once).
    urls = [header_url, _well_known(server_url, "oauth-protected-resource"), origin(server_url) + ROOT_METADATA]
    if (found := _first(session, urls, policy, "protected resource metadata")) is None:
        return None
    url, doc = found
    resource, servers = doc.get("resource"), doc.get("authorization_servers")
    if not isinstance(resource, str) or not resource_matches(resource, server_url, url, prefix=prefix):
        raise ResourceMismatchError("protected resource metadata names another resource than this MCP server; "
                                    "refusing it")
    if not isinstance(servers, list) or not servers or not all(isinstance(s, str) for s in servers):
        raise DiscoveryError("protected resource metadata lists no authorization_servers")
    return doc


def same_issuer(a: str, b: str) -> bool:
    """Whether two issuer identifiers name the same authorization server (a trailing slash aside)."""
    return a.rstrip("/") == b.rstrip("/")


def validate_server_metadata(meta: dict[str, Any], issuer: str, policy: UrlPolicy) -> dict[str, Any]:
    """Check issuer, PKCE support and every endpoint URL; returns *meta*."""
    if not isinstance(meta.get("issuer"), str) or not same_issuer(meta["issuer"], issuer):
        raise IssuerMismatchError("authorization server metadata names another issuer (RFC 8414 §3.3)")
    methods = meta.get("code_challenge_methods_supported")
    if not isinstance(methods, list) or "S256" not in methods:
        raise PKCENotSupportedError("the authorization server does not advertise PKCE S256 "
                                    "(code_challenge_methods_supported); refusing to authorize without it")
    for name in ("authorization_endpoint", "token_endpoint", "registration_endpoint", "revocation_endpoint"):
        if (value := meta.get(name)) is not None:
            if not isinstance(value, str):
                raise DiscoveryError(f"authorization server metadata: {name} is not a string")
            policy.check(value, name)
    if not isinstance(meta.get("token_endpoint"), str):
        raise DiscoveryError("authorization server metadata has no token_endpoint")
    return meta


def discover_server_metadata(session: requests.Session, issuer: str, policy: UrlPolicy) -> dict[str, Any] | None:
    """The first metadata document found for *issuer*, validated; ``None`` when there is none.

    MCP 2025-11-25 §Authorization Server Metadata Discovery: with a path, RFC 8414 path
    insertion, OIDC path insertion, then OIDC path appending.
    """
    # Without a path, OIDC path appending is the same URL as path insertion (tried once).
    urls: list[str | None] = [_well_known(issuer, "oauth-authorization-server"),
                              _well_known(issuer, "openid-configuration"),
                              _well_known(issuer, "openid-configuration", insert=False)]
    found = _first(session, urls, policy, "authorization server metadata")
    return None if found is None else validate_server_metadata(found[1], issuer, policy)


def legacy_server_metadata(session: requests.Session, server_url: str, policy: UrlPolicy) -> dict[str, Any]:
    """MCP 2025-03-26: the server's origin is the authorization server.

    Root metadata if it exists, else the default ``/authorize``, ``/token``
    and ``/register`` endpoints (2025-03-26 §Fallbacks).  PKCE S256 is
    assumed for the defaults, as that revision made it mandatory for servers.
    """
    issuer = origin(server_url)
    doc = fetch_json(session, _well_known(issuer, "oauth-authorization-server"), policy, "authorization server metadata")
    meta = doc if doc is not None else {
        "issuer": issuer, "authorization_endpoint": issuer + "/authorize", "token_endpoint": issuer + "/token",
        "registration_endpoint": issuer + "/register", "code_challenge_methods_supported": ["S256"], "_fallback": True,
    }
    return validate_server_metadata(meta, issuer, policy)
