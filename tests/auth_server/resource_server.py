"""A protected MCP server for the auth end-to-end tests: the official SDK behind a token check.

Run as ``python tests/auth_server/resource_server.py --issuer URL``; it binds
127.0.0.1 on an ephemeral port and prints ``PORT=<n>`` once it listens.

* RFC 9728 metadata at ``/.well-known/oauth-protected-resource/mcp`` naming the issuer.
* ``/mcp`` needs a JWT access token from that issuer (signature checked against
  its JWKS, ``aud`` must be this server's ``/mcp`` URL): missing or bad -> 401
  with ``resource_metadata`` and ``scope="mcp:read"``.
* The ``write`` tool needs ``mcp:write`` too: 403 ``insufficient_scope`` with
  the full scope set (step-up).
* ``GET /test/stats`` counts 401 and 403 answers.
"""

from __future__ import annotations

import argparse
import json
import socket
import warnings
from typing import Any

import jwt
import uvicorn
from mcp.server.mcpserver import MCPServer

warnings.simplefilter("ignore")

stats = {"401": 0, "403": 0, "ok": 0}


def build(issuer: str, base: str) -> Any:
    server = MCPServer("protected-test-server")

    @server.tool()
    def whoami() -> str:
        """Who the token belongs to."""
        return "alice"

    @server.tool()
    def write(text: str) -> str:
        """Needs the mcp:write scope."""
        return f"wrote {text}"

    app = server.streamable_http_app()
    jwks = jwt.PyJWKClient(issuer + "/jwks")
    resource = base + "/mcp"
    metadata_url = base + "/.well-known/oauth-protected-resource/mcp"

    async def respond(
        send: Any, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]
    ) -> None:
        raw = json.dumps(body).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), *headers],
            }
        )
        await send({"type": "http.response.body", "body": raw})

    def challenge(scope: str, error: str | None = None) -> list[tuple[bytes, bytes]]:
        value = f'Bearer resource_metadata="{metadata_url}", scope="{scope}"'
        if error:
            value += f', error="{error}"'
        return [(b"www-authenticate", value.encode())]

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        path = scope["path"]
        if path == "/.well-known/oauth-protected-resource/mcp":
            await respond(
                send,
                200,
                {
                    "resource": resource,
                    "authorization_servers": [issuer],
                    "scopes_supported": ["mcp:read", "mcp:write"],
                },
                [],
            )
            return
        if path == "/test/stats":
            await respond(send, 200, stats, [])
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        auth = headers.get("authorization", "")
        claims: dict[str, Any] | None = None
        if auth.startswith("Bearer "):
            try:
                token = auth[7:]
                key = jwks.get_signing_key_from_jwt(token)
                claims = jwt.decode(
                    token,
                    key.key,
                    algorithms=["RS256"],
                    audience=resource,
                    issuer=issuer,
                )
            except Exception:  # noqa: BLE001 - any bad token is a 401
                claims = None
        if claims is None:
            stats["401"] += 1
            await respond(send, 401, {"error": "invalid_token"}, challenge("mcp:read"))
            return
        granted = set(str(claims.get("scope", "")).split())
        needed = {"mcp:read"}
        try:
            payload = json.loads(body) if body else {}
        except ValueError:
            payload = {}
        if (
            isinstance(payload, dict)
            and payload.get("method") == "tools/call"
            and payload.get("params", {}).get("name") == "write"
        ):
            needed.add("mcp:write")
        if not needed <= granted:
            stats["403"] += 1
            await respond(
                send,
                403,
                {"error": "insufficient_scope"},
                challenge(" ".join(sorted(needed)), "insufficient_scope"),
            )
            return
        stats["ok"] += 1
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return guarded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--port", type=int, default=0, help="0: an ephemeral port")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = build(args.issuer, f"http://127.0.0.1:{port}")
    print(f"PORT={port}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(
        sockets=[sock]
    )


if __name__ == "__main__":
    main()
