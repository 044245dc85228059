"""Workload identity federation (MCP SEP-1933): a platform-issued JWT as the grant.

A workload (a Kubernetes pod, a CI job, a cloud VM) gets a short-lived JWT
from its platform, usually as a file the platform rewrites before it expires.
The MCP server's authorization server trusts that platform and accepts the JWT
as an RFC 7523 JWT bearer grant: no client secret to store or rotate.  Use
``OAuth(grant_type="jwt_bearer", client_id=..., assertion=WorkloadIdentityAssertion(...))``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import attrs

from ._errors import TokenRequestError


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
