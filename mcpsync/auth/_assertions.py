"""Assertions for the RFC 7523 JWT bearer grant (``OAuth(grant_type="jwt_bearer", assertion=...)``).

:class:`IdJagAssertion`, enterprise-managed authorization (MCP ext-auth SEP-990): the user's
identity provider exchanges their ID token for an Identity Assertion JWT Authorization Grant
(RFC 8693 token exchange), which the MCP server's authorization server accepts as the grant.
Use ``OAuth(grant_type="jwt_bearer", client_id=..., client_secret=...,
assertion=IdJagAssertion(...))``.

:class:`WorkloadIdentityAssertion`, workload identity federation (MCP SEP-1933): a workload
(a Kubernetes pod, a CI job, a cloud VM) gets a short-lived JWT from its platform, usually as a
file the platform rewrites before it expires.  The MCP server's authorization server trusts that
platform and accepts the JWT as the grant: no client secret to store or rotate.  Use
``OAuth(grant_type="jwt_bearer", client_id=..., assertion=WorkloadIdentityAssertion(...))``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import attrs
import requests

from ._errors import TokenRequestError
from ._http import check_token, post_json


_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


@attrs.define(kw_only=True, eq=False)
class IdJagAssertion:
    """Obtain an ID-JAG from the identity provider, for one authorization server and resource.

    :param token_endpoint: the identity provider's token endpoint.
    :param id_token: the user's ID token from that provider (a secret: not in reprs).
    :param client_id: this application's client ID *at the identity provider*.
    :param client_secret: its secret there, if it is a confidential client.
    """

    token_endpoint: str
    _id_token: str = attrs.field(repr=False)
    client_id: str
    _client_secret: str | None = attrs.field(default=None, repr=False)
    _session: requests.Session | None = attrs.field(default=None, repr=False)

    def __call__(self, issuer: str, resource: str, scope: str | None) -> str:
        """The ID-JAG for the authorization server *issuer* and the MCP server *resource*."""
        form = {"grant_type": _TOKEN_EXCHANGE, "subject_token": self._id_token, "subject_token_type": _ID_TOKEN,
                "requested_token_type": _ID_JAG, "audience": issuer, "resource": resource, "client_id": self.client_id}
        if self._client_secret:
            form["client_secret"] = self._client_secret
        if scope:
            form["scope"] = scope
        # Our own session is closed after the one request; the caller's is left open.
        with contextlib.nullcontext(self._session) if self._session else requests.Session() as session:
            response, body = post_json(session, self.token_endpoint, "token exchange", TokenRequestError, data=form)
        check_token(response, body, "token exchange")
        if body.get("issued_token_type") not in (None, _ID_JAG):
            raise TokenRequestError("token exchange returned another token type than an ID-JAG")
        return str(body["access_token"])


#: A JWT is a few KiB at most; a bigger "token file" is the wrong file.
_MAX_TOKEN = 64 * 1024


def _path(value: str | os.PathLike[str]) -> Path:
    return Path(value).expanduser()


@attrs.define(kw_only=True, eq=False)
class WorkloadIdentityAssertion:
    """The workload's JWT, read afresh for every token request.

    Give exactly one source:

    :param token_file: a file the platform keeps current (e.g. a Kubernetes
        projected service account token); read at each token request, so a
        rotated token is picked up without a restart.
    :param token: a JWT obtained some other way (a secret: never in reprs).
    :param provider: ``fn() -> str`` returning a current JWT (e.g. from a
        cloud metadata service).
    """

    token_file: Path | None = attrs.field(default=None, converter=attrs.converters.optional(_path))
    _token: str | None = attrs.field(default=None, repr=lambda token: "[redacted]" if token else "None")
    _provider: Callable[[], str] | None = None

    def __attrs_post_init__(self) -> None:
        if sum(source is not None for source in (self.token_file, self._token, self._provider)) != 1:
            raise ValueError("give exactly one of token_file=, token= or provider=")

    def _read(self) -> str:
        if self._token is not None:
            return self._token
        if self._provider is not None:
            return self._provider()
        assert self.token_file is not None
        try:
            with open(self.token_file, "rb") as handle:
                raw = handle.read(_MAX_TOKEN + 1)
        except OSError as exc:
            raise TokenRequestError(f"cannot read the workload identity token {self.token_file}: {exc.strerror}"
                                    ) from None
        if len(raw) > _MAX_TOKEN:
            raise TokenRequestError(f"the workload identity token file {self.token_file} is too large for a JWT")
        return raw.decode("ascii", "replace").strip()

    def __call__(self, issuer: str, resource: str, scope: str | None) -> str:
        """The assertion for a token request (the platform chose its audience already)."""
        jwt = self._read()
        if jwt.count(".") != 2:
            raise TokenRequestError("the workload identity token is not a JWT")
        return jwt
