"""The OAuth record a token store keeps for one MCP server, as typed attrs classes.

The stored JSON keeps the earlier versions' shape, so their records load::

    {"tokens": {...}, "clients": {issuer: {...}}, "server_metadata": {...},
     "server": "https://...", "client_issuer": "https://...", "dpop_key": {...}}

``server`` is the MCP server the record belongs to (a record under the same key for
another server is refused); ``client_issuer`` the authorization server a pre-registered
``client_id`` was first used with (its credentials go nowhere else); ``dpop_key`` the
private key DPoP-bound tokens are bound to.  Members a class does not know are kept in
its ``extra`` and written back (so are ``resource_metadata`` and ``resource``, which earlier
versions wrote and nothing read); ``None`` members are left out.  A part that is not what
it should be (no ``access_token``, say) loads as absent: the next request logs in again.
"""

from __future__ import annotations

import time
from typing import Any, TypeVar

import attrs


_T = TypeVar("_T")
_text = attrs.validators.instance_of(str)


def scope_set(value: Any) -> set[str]:
    """The scopes in a space-separated string or a list (RFC 6749 §3.3); anything else: none."""
    if isinstance(value, str):
        return set(value.split())
    return {str(v) for v in value} if isinstance(value, (list, tuple, set, frozenset)) else set()


def join_scopes(scopes: set[str] | frozenset[str]) -> str | None:
    """The ``scope`` parameter for *scopes* (sorted, so requests are reproducible); none: ``None``."""
    return " ".join(sorted(scopes)) if scopes else None


@attrs.define
class Tokens:
    """The tokens in use for one server; secrets are not in the ``repr``."""

    access_token: str = attrs.field(repr=False, validator=_text)
    #: ``"Bearer"`` or ``"DPoP"`` (bound to the key whose thumbprint is :attr:`dpop_jkt`).
    token_type: str = "Bearer"
    #: Absolute ``time.time()`` expiry (``None``: not said).
    expires_at: float | None = None
    refresh_token: str | None = attrs.field(default=None, repr=False)
    scope: str | None = None
    issuer: str | None = None
    #: The RFC 8707 resource they were issued for.
    resource: str | None = None
    #: The URL prefix they may be sent to (the resource, or the origin after 2025-03-26 discovery).
    bound_to: str | None = None
    dpop_jkt: str | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, repr=False)

    def expiring(self, margin: float = 30.0) -> bool:
        """Whether they expire within *margin* seconds."""
        return isinstance(self.expires_at, (int, float)) and time.time() >= self.expires_at - margin


@attrs.define
class Registration:
    """A client registration with one authorization server (``source``: dcr, cimd or preregistered)."""

    issuer: str = attrs.field(validator=_text)
    client_id: str = attrs.field(validator=_text)
    token_endpoint_auth_method: str = "none"
    source: str = "dcr"
    redirect_uris: list[str] = attrs.field(factory=list)
    client_secret: str | None = attrs.field(default=None, repr=False)
    client_secret_expires_at: float | None = None
    extra: dict[str, Any] = attrs.field(factory=dict, repr=False)


def parse(cls: type[_T], data: Any) -> _T | None:
    """*data*, a JSON object, as *cls* (members it does not know in ``extra``); ``None``: not one."""
    if isinstance(data, cls) or data is None:
        return data
    if not isinstance(data, dict):
        return None
    names = attrs.fields_dict(cls).keys() - {"extra"}  # type: ignore[arg-type]
    try:
        members = {k: v for k, v in data.items() if k in names}
        members["extra"] = {k: v for k, v in data.items() if k not in names}
        return cls(**members)
    except TypeError:  # a required member missing or not a string
        return None


def _tokens(value: Any) -> Tokens | None:
    return parse(Tokens, value)


def _clients(value: Any) -> dict[str, Registration]:
    found = {issuer: parse(Registration, raw) for issuer, raw in value.items()} if isinstance(value, dict) else {}
    return {issuer: client for issuer, client in found.items() if client is not None}


@attrs.define
class Record:
    """Everything kept for one MCP server under its store key."""

    tokens: Tokens | None = attrs.field(default=None, converter=_tokens)
    #: Dynamic (or metadata-document) registrations, by issuer: each is shown to its own only.
    clients: dict[str, Registration] = attrs.field(factory=dict, converter=_clients)
    server_metadata: dict[str, Any] | None = None
    server: str | None = None
    client_issuer: str | None = None
    dpop_key: dict[str, Any] | None = attrs.field(default=None, repr=False)
    extra: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Any) -> Record:
        """The record a store loaded (``None`` or not an object: an empty one)."""
        return parse(cls, data) or cls()


def to_json(value: Any) -> Any:
    """*value* (a record, or any part of one) as the JSON a store saves."""
    if attrs.has(type(value)):
        members = attrs.asdict(value, recurse=False)
        return {**value.extra, **{k: to_json(v) for k, v in members.items() if v is not None and k != "extra"}}
    return {k: to_json(v) for k, v in value.items()} if isinstance(value, dict) else value
