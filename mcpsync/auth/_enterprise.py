"""Enterprise-managed authorization (MCP ext-auth SEP-990): ID-JAG assertions.

The user's identity provider exchanges their ID token for an Identity
Assertion JWT Authorization Grant (RFC 8693 token exchange), which the MCP
server's authorization server accepts as a JWT bearer grant (RFC 7523).  Use
``OAuth(grant_type="jwt_bearer", client_id=..., client_secret=...,
assertion=IdJagAssertion(...))``.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import attrs

from ._errors import TokenRequestError
from ._http import check_token, post_json

if TYPE_CHECKING:  # pragma: no cover
    import requests


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
        import requests as _requests

        form = {"grant_type": _TOKEN_EXCHANGE, "subject_token": self._id_token, "subject_token_type": _ID_TOKEN,
                "requested_token_type": _ID_JAG, "audience": issuer, "resource": resource, "client_id": self.client_id}
        if self._client_secret:
            form["client_secret"] = self._client_secret
        if scope:
            form["scope"] = scope
        # Our own session is closed after the one request; the caller's is left open.
        with contextlib.nullcontext(self._session) if self._session else _requests.Session() as session:
            response, body = post_json(session, self.token_endpoint, "token exchange", TokenRequestError, data=form)
        check_token(response, body, "token exchange")
        if body.get("issued_token_type") not in (None, _ID_JAG):
            raise TokenRequestError("token exchange returned another token type than an ID-JAG")
        return str(body["access_token"])
