"""A Bearer-only MCP server: the official SDK's own auth middleware, for oidc-provider's tokens.

Run as ``python tests/auth_server/sdk_bearer_server.py --issuer URL``; it binds 127.0.0.1
on an ephemeral port and prints ``PORT=<n>`` once it listens.

Unlike ``resource_server.py`` (a token check written for the tests, DPoP included), this
is the ``mcp`` SDK's ``MCPServer`` with ``AuthSettings`` and a ``TokenVerifier``: its
``BearerAuthBackend`` takes ``Authorization: Bearer`` only, its ``RequireAuthMiddleware``
answers ``WWW-Authenticate: Bearer ...`` and its RFC 9728 metadata names no DPoP, as most
MCP servers today.  The verifier checks the JWT against the issuer's JWKS (``aud`` must be
this server's ``/mcp`` URL).

``GET /test/seen`` lists every ``Authorization`` header value the server received (the
log of a server that would keep what it is sent), and the count of 401 answers.
"""

from __future__ import annotations

import argparse
import json
import socket
import warnings
from typing import Any

import jwt
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

warnings.simplefilter("ignore")


class JwtVerifier:
    """The SDK's ``TokenVerifier`` protocol: a JWT from *issuer* for *resource*."""

    def __init__(self, issuer: str, resource: str) -> None:
        self.issuer, self.resource = issuer, resource
        self.jwks = jwt.PyJWKClient(issuer + "/jwks")

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = self.jwks.get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key.key, algorithms=["RS256"], audience=self.resource, issuer=self.issuer)
        except Exception:  # noqa: BLE001 - any bad token is refused
            return None
        return AccessToken(token=token, client_id=str(claims.get("client_id", "")),
                           scopes=str(claims.get("scope", "")).split(), expires_at=claims.get("exp"),
                           resource=self.resource)


def build(issuer: str, base: str) -> Any:
    resource = base + "/mcp"
    server = MCPServer(
        "sdk-bearer-server",
        token_verifier=JwtVerifier(issuer, resource),
        auth=AuthSettings(issuer_url=issuer, resource_server_url=resource, required_scopes=["mcp:read"],
                          validate_token_resource=True),
    )

    @server.tool()
    def whoami() -> str:
        """Who the token belongs to."""
        return "alice"

    app = server.streamable_http_app()
    seen: list[str] = []
    refused = [0]

    async def logged(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/test/seen":
            body = json.dumps({"authorization": seen, "401": refused[0]}).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                if name.lower() == b"authorization":
                    seen.append(value.decode())

        async def counting(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                refused[0] += 1
            await send(message)

        await app(scope, receive, counting)

    return logged


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issuer", required=True)
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = build(args.issuer, f"http://127.0.0.1:{port}")
    print(f"PORT={port}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
