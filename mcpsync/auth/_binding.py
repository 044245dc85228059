"""One MCP server's *binding* in an :class:`~mcpsync.auth.OAuth`: its record, tokens and lock.

:class:`Settings` is what the ``OAuth`` was given, shared by all its bindings (a
pre-registered client among it: :class:`Preregistered`, bound to one issuer).  A
:class:`Binding` is one server's part: the store key and record (:meth:`Binding.load`
refuses another server's), the tokens in use, the lock that makes refresh and login
single-flight, the URL policy and DPoP keys, and the :attr:`~Binding.scope` the tokens may
be sent to (RFC 8707: their resource, origin and path).  The flows that fill it are
:mod:`._registration`, :mod:`._tokens` and :mod:`._flow`, functions over a binding.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ._discovery import canonical_resource, same_issuer, within
from ._dpop import DPoPKeys
from ._errors import IssuerMismatchError, TokenStoreError
from ._record import Record, Tokens, to_json
from ._urlpolicy import UrlPolicy

if TYPE_CHECKING:  # pragma: no cover
    import requests

    from ._loopback import LoopbackLogin
    from ._stores import TokenStore


@attrs.define
class Preregistered:
    """A client registered out of band (``client_id``, maybe a secret) with ONE authorization server.

    Its credentials go to that issuer only: the one given, else the one the token
    store remembers, else the first one seen (which is then remembered).  Metadata
    that names another authorization server later (a compromised or switched MCP
    server) gets :class:`IssuerMismatchError` before anything is sent to it, as a
    dynamically registered client is never shown to another issuer either.
    """

    client_id: str
    secret: str | None = attrs.field(repr=False)
    #: The issuer the credentials belong to (``None``: not seen yet).
    issuer: str | None
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False, eq=False)

    def check(self, issuer: str, stored: str | None) -> None:
        """Allow *issuer* (the authorization server about to get the credentials) or raise.

        :param stored: the issuer a token store record bound them to earlier, if any.
        :raises IssuerMismatchError: *issuer* is another authorization server.
        """
        with self._lock:
            if (expected := self.issuer or stored) is None:
                self.issuer = issuer
            elif not same_issuer(expected, issuer):
                raise IssuerMismatchError("the MCP server now names another authorization server than the one the "
                                          "pre-registered client_id belongs to; its credentials are not sent there "
                                          "(pass issuer= or a client registered with the new server)")


@attrs.frozen
class Settings:
    """What an ``OAuth`` was given (see its parameters), shared by the bindings it makes."""

    store: TokenStore
    login: LoopbackLogin | None
    session: requests.Session
    client_name: str
    scopes: frozenset[str]
    client: Preregistered | None
    client_metadata_url: str | None
    redirect_uri: str | None
    grant_type: str
    private_key: Any = attrs.field(repr=False)
    signing_algorithm: str | None
    resolve_hosts: bool
    assertion: Callable[[str, str, str | None], str] | None
    dpop: bool | None
    resource_prefix: bool
    key: str | None


class Binding:
    """One MCP server's record, tokens in use, lock and scope (see the module)."""

    def __init__(self, settings: Settings, server_url: str) -> None:
        self.settings = settings
        self.server_url = server_url
        #: The server's canonical URL: what its record is for.
        self.canonical = canonical_resource(server_url)
        self.key = settings.key or self.canonical
        self.policy = UrlPolicy(server_url, resolve=settings.resolve_hosts)
        self.dpop = DPoPKeys(settings.dpop, self.load)
        #: Held while tokens are refreshed or a login runs.
        self.lock = threading.RLock()
        #: The tokens in use (``None``: none, or not read from the store yet).
        self.tokens: Tokens | None = None

    def __repr__(self) -> str:
        return f"<Binding {self.canonical!r}>"

    @property
    def scope(self) -> str:
        """Where the tokens may go (canonical): the resource they were issued for, else the server's URL."""
        bound = self.tokens and (self.tokens.bound_to or self.tokens.resource)
        return canonical_resource(bound) if bound else self.canonical

    def covers(self, url: str) -> bool:
        """Whether a request to *url* may carry this server's tokens (RFC 8707: in their resource)."""
        return canonical_resource(url) == self.canonical or within(url, self.scope)

    def load(self) -> Record:
        """This server's record (empty: none).

        :raises TokenStoreError: the record under this key is another server's (one key
            given to two servers): its tokens are not used here.
        """
        record = Record.from_json(self.settings.store.load(self.key))
        if record.server not in (None, self.canonical):
            raise TokenStoreError("the token store's record under this key belongs to another MCP server; "
                                  "use one key per server (OAuth(key=...))")
        return record

    def save(self, record: Record) -> None:
        """Save *record* (the caller holds the store's lock on :attr:`key`)."""
        record.server = self.canonical
        self.dpop.keep(record)
        self.settings.store.save(self.key, to_json(record))
