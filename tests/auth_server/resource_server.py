"""A protected MCP server for the auth end-to-end tests: the official SDK behind a token check.

Run as ``python tests/auth_server/resource_server.py --issuer URL``; it binds
127.0.0.1 on an ephemeral port and prints ``PORT=<n>`` once it listens.

* RFC 9728 metadata at ``/.well-known/oauth-protected-resource/mcp`` naming the issuer.
* ``/mcp`` needs a JWT access token from that issuer (signature checked against
  its JWKS, ``aud`` must be this server's ``/mcp`` URL): missing or bad -> 401
  with ``resource_metadata`` and ``scope="mcp:read"``.
* The ``write`` tool needs ``mcp:write`` too: 403 ``insufficient_scope`` with
  the full scope set (step-up).
* DPoP-bound tokens (``cnf.jkt``, RFC 9449) must come as ``Authorization: DPoP``
  with a valid proof: signature by the key in its header, ``typ``, ``htm``,
  ``htu``, ``iat``, a ``jti`` never seen before, ``ath`` and the key's thumbprint
  equal to ``cnf.jkt``; a bound token sent as ``Bearer`` is refused.  Checked
  here independently of mcpsync (PyJWT and hashlib only).
* ``--dpop-nonce``: proofs must carry this server's nonce (401
  ``use_dpop_nonce`` with ``DPoP-Nonce`` otherwise); the nonce changes every
  five requests and is announced in ``DPoP-Nonce`` on the 200 answers.
  ``--dpop-nonce-loop``: every proof is answered with a new nonce (a broken server).
* ``--json``: plain JSON replies (the SDK's ``json_response=True``) instead of SSE streams.
* ``--legacy``: the HTTP+SSE transport of 2024-11-05 instead (stream ``GET /mcp``, POSTs to
  ``/messages/``), every request behind the same token check.  Its metadata is the
  origin's own (``/.well-known/oauth-protected-resource``, ``resource`` the origin), as the
  SDK publishes it for ``resource_server_url`` = the origin: the message endpoint lies
  outside ``/mcp``, and a token goes only where its resource covers.
* ``--stream-metadata`` (with ``--legacy``): the metadata is the stream's own
  (``/.well-known/oauth-protected-resource/mcp``, ``resource`` ``/mcp``), so the message
  endpoint lies outside the token's resource: the client must still send the token there,
  as the server named that endpoint itself.
* ``--prm-resource URL``: publish *URL* as the ``resource`` (and take tokens for it): a
  server at ``/mcp`` claiming more than itself.
* ``tools/call`` of ``leak`` answers a JSON-RPC error whose message and data echo the
  token the request carried (a hostile server).
* ``GET /test/switch?issuer=URL``: from now on the metadata names *URL* as the
  authorization server and only its tokens are taken (a server that moved, or was taken over).
* ``GET /test/stats`` counts 401 and 403 answers, DPoP requests and nonce challenges.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import secrets
import socket
import time
import warnings
from typing import Any
from urllib.parse import parse_qs

import jwt
import uvicorn
from mcp.server.mcpserver import MCPServer

warnings.simplefilter("ignore")

stats = {"401": 0, "403": 0, "ok": 0, "dpop": 0, "nonce_challenges": 0, "bad_proof": 0}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _thumbprint(jwk: dict[str, Any]) -> str:
    members = {k: jwk[k] for k in ("crv", "kty", "x", "y")}
    return _b64(hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest())


class DPoPCheck:
    """RFC 9449 §4.3 and §7 checks of a proof presented with an access token."""

    def __init__(self, require_nonce: bool, loop: bool) -> None:
        self.require_nonce = require_nonce or loop
        self.loop = loop
        self.nonce = secrets.token_urlsafe(12)
        self.uses = 0
        self.seen: set[str] = set()

    def current_nonce(self) -> str:
        if self.loop or self.uses >= 5:
            self.nonce, self.uses = secrets.token_urlsafe(12), 0
        return self.nonce

    def verify(self, proof: str | None, method: str, url: str, token: str, jkt: str) -> str | None:
        """``None`` when the proof is good, else the error code to answer with."""
        if not proof or "," in proof:
            return "invalid_dpop_proof"
        try:
            header = jwt.get_unverified_header(proof)
            jwk = header["jwk"]
            if header.get("typ") != "dpop+jwt" or "d" in jwk:
                return "invalid_dpop_proof"
            claims = jwt.decode(proof, jwt.PyJWK(jwk).key, algorithms=["ES256"])
        except Exception:  # noqa: BLE001 - any malformed proof is refused
            return "invalid_dpop_proof"
        if (
            claims.get("htm") != method
            or claims.get("htu") != url
            or abs(time.time() - float(claims.get("iat", 0))) > 60
            or not isinstance(claims.get("jti"), str)
            or claims["jti"] in self.seen
            or claims.get("ath") != _b64(hashlib.sha256(token.encode()).digest())
            or _thumbprint(jwk) != jkt
        ):
            return "invalid_dpop_proof"
        self.seen.add(claims["jti"])
        if self.require_nonce:
            if claims.get("nonce") != self.nonce or self.loop:
                return "use_dpop_nonce"
            self.uses += 1
        return None


def build(issuer: str, base: str, dpop: DPoPCheck, json_response: bool = False, legacy: bool = False,
          prm_resource: str | None = None, stream_metadata: bool = False) -> Any:
    server = MCPServer("protected-test-server")

    @server.tool()
    def whoami() -> str:
        """Who the token belongs to."""
        return "alice"

    @server.tool()
    def write(text: str) -> str:
        """Needs the mcp:write scope."""
        return f"wrote {text}"

    if legacy:
        # The 2024-11-05 transport: the event stream at /mcp, the POSTs at the endpoint it names.
        app = server.sse_app(sse_path="/mcp", message_path="/messages/")
    else:
        app = server.streamable_http_app(json_response=json_response)
    jwks = jwt.PyJWKClient(issuer + "/jwks")
    current = {"issuer": issuer}
    at_origin = legacy and not stream_metadata
    resource = prm_resource or (base if at_origin else base + "/mcp")
    metadata_url = base + "/.well-known/oauth-protected-resource" + ("" if at_origin else "/mcp")

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
        dpop_value = f'DPoP algs="ES256", resource_metadata="{metadata_url}", scope="{scope}"'
        return [(b"www-authenticate", f"{value}, {dpop_value}".encode())]

    def nonce_challenge() -> list[tuple[bytes, bytes]]:
        value = f'DPoP error="use_dpop_nonce", resource_metadata="{metadata_url}"'
        return [
            (b"www-authenticate", value.encode()),
            (b"dpop-nonce", dpop.current_nonce().encode()),
        ]

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        path = scope["path"]
        if base + path == metadata_url:
            await respond(
                send,
                200,
                {
                    "resource": resource,
                    "authorization_servers": [current["issuer"]],
                    "scopes_supported": ["mcp:read", "mcp:write"],
                },
                [],
            )
            return
        if path == "/test/stats":
            await respond(send, 200, stats, [])
            return
        if path == "/test/switch":
            current["issuer"] = parse_qs(scope["query_string"].decode())["issuer"][0]
            await respond(send, 200, current, [])
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
        scheme, _, token = auth.partition(" ")
        if scheme in ("Bearer", "DPoP"):
            try:
                key = jwks.get_signing_key_from_jwt(token)
                claims = jwt.decode(
                    token,
                    key.key,
                    algorithms=["RS256"],
                    audience=resource,
                    issuer=current["issuer"],
                )
            except Exception:  # noqa: BLE001 - any bad token is a 401
                claims = None
        jkt = (claims or {}).get("cnf", {}).get("jkt")
        if claims is not None and (scheme == "DPoP") != bool(jkt):
            claims = None  # RFC 9449 §7.1: a bound token never as Bearer, a bearer one never as DPoP
        if claims is not None and jkt:
            stats["dpop"] += 1
            # htu is the URL requested (RFC 9449 §4.2): /mcp, or the legacy POST endpoint.
            error = dpop.verify(headers.get("dpop"), scope["method"], base + path, token, jkt)
            if error == "use_dpop_nonce":
                stats["nonce_challenges"] += 1
                await respond(send, 401, {"error": error}, nonce_challenge())
                return
            if error:
                stats["bad_proof"] += 1
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
        if isinstance(payload, dict) and payload.get("params", {}).get("name") == "leak":
            error = {"code": -32602, "message": f"token {token} is not welcome here", "data": {"seen": auth}}
            await respond(send, 200, {"jsonrpc": "2.0", "id": payload.get("id"), "error": error}, [])
            return
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

        if not (jkt and dpop.require_nonce):
            await app(scope, replay, send)
            return

        async def announce(message: dict[str, Any]) -> None:
            # RFC 9449 §9: a new nonce may come with any answer, not only with a 401.
            if message["type"] == "http.response.start":
                nonce = dpop.current_nonce().encode()
                message = {**message, "headers": [*message.get("headers", []), (b"dpop-nonce", nonce)]}
            await send(message)

        await app(scope, replay, announce)

    return guarded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--dpop-nonce", action="store_true")
    parser.add_argument("--dpop-nonce-loop", action="store_true")
    parser.add_argument("--port", type=int, default=0, help="0: an ephemeral port")
    parser.add_argument("--json", action="store_true", help="JSON replies instead of SSE streams")
    parser.add_argument("--legacy", action="store_true", help="the HTTP+SSE transport of 2024-11-05")
    parser.add_argument("--stream-metadata", action="store_true", help="legacy: metadata naming /mcp")
    parser.add_argument("--prm-resource", help="the resource to claim in the metadata")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = build(
        args.issuer,
        f"http://127.0.0.1:{port}",
        DPoPCheck(args.dpop_nonce, args.dpop_nonce_loop),
        args.json,
        args.legacy,
        args.prm_resource,
        args.stream_metadata,
    )
    print(f"PORT={port}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(
        sockets=[sock]
    )


if __name__ == "__main__":
    main()
