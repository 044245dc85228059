"""DPoP (RFC 9449) unit tests: proofs, keys, stores, nonce retry and its bound, secrets.

Proofs are verified here independently of mcpsync (PyJWT with the public JWK from
the proof's header, thumbprints with hashlib).  The authorization server and MCP
server of the flow tests are ``responses`` callbacks that check every proof the
way ``tests/auth_server/resource_server.py`` does, so that servers misbehaving in
ways no real one does (a nonce loop, a nonce challenge without a nonce) can be
staged; the real-server tests are in ``tests/test_auth_dpop_e2e.py`` and the
conformance suite's ``auth/dpop`` and ``auth/dpop-nonce``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import pickle
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import jwt
import pytest
import requests
import responses

from mcpsync.auth import (
    DPoPError,
    DPoPNonceError,
    FileTokenStore,
    KeyringTokenStore,
    MemoryTokenStore,
    OAuth,
    TokenRequestError,
    TokenStore,
)
from mcpsync.auth import _dpop
from mcpsync.auth._discovery import canonical_resource
from mcpsync.auth._dpop import DPoPKey, NonceCache, htu, jwk_thumbprint
from tests.test_auth_stores import DictKeyring, dict_keyring  # noqa: F401
from tests.test_auth_unit import (  # noqa: F401
    AS,
    MCP,
    SECRET,
    _as_meta,
    _mount_metadata,
    _oauth,
    rsps,
)

pytestmark = pytest.mark.timeout(30)

KEY = canonical_resource(MCP)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _thumbprint(jwk: dict[str, Any]) -> str:
    members = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    return _b64(hashlib.sha256(members.encode()).digest())


def _verify(proof: str, method: str, url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, claims) of a proof that passes RFC 9449 §4.3's checks; AssertionError otherwise."""
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
    assert "d" not in header["jwk"]  # never the private key
    claims = jwt.decode(proof, jwt.PyJWK(header["jwk"]).key, algorithms=["ES256"])
    assert claims["htm"] == method and claims["htu"] == url
    assert abs(claims["iat"] - time.time()) < 60
    assert isinstance(claims["jti"], str) and len(claims["jti"]) >= 16
    return header, claims


# -- proofs and keys ------------------------------------------------------------------------------


def test_proof_claims_and_signature_verify_with_the_public_jwk() -> None:
    key = DPoPKey.generate()
    proof = key.proof("post", "https://mcp.example.com/api/mcp?x=1#frag", nonce="n-1", access_token="tok")
    header, claims = _verify(proof, "POST", "https://mcp.example.com/api/mcp")
    assert header["jwk"] == key.public_jwk
    assert claims["nonce"] == "n-1"
    assert claims["ath"] == _b64(hashlib.sha256(b"tok").digest())
    # Token-endpoint proofs: no ath, no nonce unless given; a new jti every time.
    bare = [key.proof("POST", AS + "/token") for _ in range(20)]
    claim_sets = [_verify(p, "POST", AS + "/token")[1] for p in bare]
    assert all("ath" not in c and "nonce" not in c for c in claim_sets)
    assert len({c["jti"] for c in claim_sets}) == 20
    # Another key's public JWK does not verify it.
    other = jwt.PyJWK(DPoPKey.generate().public_jwk).key
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(proof, other, algorithms=["ES256"])


def test_htu_and_thumbprint() -> None:
    assert htu("https://h.example:8443/a/b?q=1#f") == "https://h.example:8443/a/b"
    key = DPoPKey.generate()
    assert key.thumbprint == jwk_thumbprint(key.public_jwk) == _thumbprint(key.public_jwk)


def test_key_round_trip_and_damaged_keys() -> None:
    key = DPoPKey.generate()
    stored = key.private_jwk()
    again = DPoPKey.from_jwk(json.loads(json.dumps(stored)))
    assert again.thumbprint == key.thumbprint
    _verify(again.proof("GET", MCP), "GET", MCP)
    other = DPoPKey.generate().private_jwk()
    for damaged in (
        None,
        "not a jwk",
        {**stored, "crv": "P-384"},
        {**stored, "kty": "RSA"},
        {**stored, "x": other["x"]},  # the public half of another key
        {**stored, "d": "!!"},
        {k: v for k, v in stored.items() if k != "d"},
    ):
        with pytest.raises(DPoPError, match="damaged") as info:
            DPoPKey.from_jwk(damaged)
        assert stored["d"] not in str(info.value)


def test_key_repr_and_pickle_never_show_the_private_key() -> None:
    key = DPoPKey.generate()
    d = key.private_jwk()["d"]
    assert d not in repr(key) and key.thumbprint in repr(key)
    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(key)


def test_missing_cryptography_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _dpop.importlib.import_module

    def no_crypto(name: str, package: str | None = None) -> Any:
        if name.startswith("cryptography"):
            raise ImportError(name)
        return real(name, package)

    monkeypatch.setattr(_dpop.importlib, "import_module", no_crypto)
    with pytest.raises(DPoPError, match=r"mcpsync\[dpop\]"):
        DPoPKey.generate()


def test_importing_auth_does_not_import_cryptography() -> None:
    code = "import sys, mcpsync, mcpsync.auth; print('cryptography' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_nonce_cache_is_per_origin_and_ignores_junk() -> None:
    cache = NonceCache()
    assert cache.update("https://A.example/x?y", "n1") == "n1"
    assert cache.get("https://a.example/other") == "n1"
    assert cache.get("https://b.example/") is None
    assert cache.update("https://a.example/", "") is None
    assert cache.update("https://a.example/", "bad\nnonce") is None
    assert cache.update("https://a.example/", "x" * 2000) is None
    assert cache.get("https://a.example/") == "n1"


# -- the flow against staged servers ------------------------------------------------------------


class Servers:
    """An authorization server issuing DPoP-bound tokens and an MCP server checking proofs.

    :param as_nonce: the token endpoint's required nonce (``"loop"``: a new one every time).
    :param rs_nonce: the same for the MCP server.
    """

    def __init__(
        self,
        rsps: responses.RequestsMock,
        *,
        as_nonce: str | None = None,
        rs_nonce: str | None = None,
        nonce_header: bool = True,
        meta: dict[str, Any] | None = None,
        token_type: str = "DPoP",
    ) -> None:
        self.as_nonce, self.rs_nonce, self.nonce_header = as_nonce, rs_nonce, nonce_header
        self.token_type = token_type
        self.bound: dict[str, str | None] = {}  # access token -> jkt (None: a bearer token)
        self.token_requests: list[dict[str, Any]] = []
        self.mcp_requests: list[dict[str, Any]] = []
        self.jtis: set[str] = set()
        self.issued = 0
        _mount_metadata(
            rsps, meta=meta or _as_meta(dpop_signing_alg_values_supported=["ES256", "RS256"])
        )
        rsps.add(responses.POST, AS + "/register", json={"client_id": "cid"}, status=201)
        rsps.add_callback(responses.POST, AS + "/token", callback=self.token)
        rsps.add_callback(responses.POST, MCP, callback=self.mcp)

    def _fresh(self, claims: dict[str, Any]) -> None:
        assert claims["jti"] not in self.jtis, "a proof was reused"
        self.jtis.add(claims["jti"])

    def _nonce(self, wanted: str | None, claims: dict[str, Any]) -> str | None:
        """The nonce to challenge with, or None when the proof's nonce is fine."""
        if wanted is None:
            return None
        if wanted == "loop":
            return f"loop-{len(self.jtis)}"
        return None if claims.get("nonce") == wanted else wanted

    def token(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        proof = request.headers.get("DPoP")
        form = {k: v[0] for k, v in parse_qs(str(request.body)).items()}
        record: dict[str, Any] = {"form": form, "proof": proof}
        self.token_requests.append(record)
        if not proof:  # no proof, no binding: a bearer token
            return 200, {}, json.dumps(self._issue(None, "Bearer"))
        header, claims = _verify(proof, "POST", AS + "/token")
        assert "ath" not in claims
        self._fresh(claims)
        record["claims"] = claims
        challenge = self._nonce(self.as_nonce, claims)
        if challenge:
            headers = {"DPoP-Nonce": challenge} if self.nonce_header else {}
            return 400, headers, json.dumps({"error": "use_dpop_nonce"})
        bound = self.token_type == "DPoP"
        body = self._issue(_thumbprint(header["jwk"]) if bound else None, self.token_type)
        return 200, {}, json.dumps(body)

    def _issue(self, jkt: str | None, token_type: str) -> dict[str, Any]:
        self.issued += 1
        token = f"{SECRET}-at{self.issued}"
        self.bound[token] = jkt
        return {
            "access_token": token,
            "token_type": token_type,
            "expires_in": 3600,
            "refresh_token": f"{SECRET}-rt{self.issued}",
        }

    def mcp(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        auth = str(request.headers.get("Authorization", ""))
        proof = request.headers.get("DPoP")
        self.mcp_requests.append({"auth": auth, "proof": proof})
        scheme, _, token = auth.partition(" ")
        if scheme == "Bearer" and token in self.bound and self.bound[token] is None:
            return 200, {}, "{}"
        if scheme != "DPoP" or not self.bound.get(token) or not proof:
            return 401, {"WWW-Authenticate": 'DPoP algs="ES256"'}, ""
        header, claims = _verify(proof, "POST", MCP)
        self._fresh(claims)
        assert claims["ath"] == _b64(hashlib.sha256(token.encode()).digest())
        assert _thumbprint(header["jwk"]) == self.bound[token]
        challenge = self._nonce(self.rs_nonce, claims)
        if challenge:
            headers = {"WWW-Authenticate": 'DPoP error="use_dpop_nonce"'}
            if self.nonce_header:
                headers["DPoP-Nonce"] = challenge
            return 401, headers, ""
        return 200, {}, "{}"


def _call(auth: OAuth) -> requests.Response:
    with requests.Session() as s:
        return s.post(MCP, data=b"{}", auth=auth)


@pytest.fixture(params=["memory", "file", "keyring"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> TokenStore:
    if request.param == "memory":
        return MemoryTokenStore()
    if request.param == "file":
        return FileTokenStore(tmp_path / "tokens")
    request.getfixturevalue("dict_keyring")
    return KeyringTokenStore(service="mcpsync-dpop-test")


def test_dpop_flow_keeps_the_key_beside_the_tokens(
    rsps: responses.RequestsMock, store: TokenStore, tmp_path: Path
) -> None:
    servers = Servers(rsps)
    response = _call(_oauth(store=store))
    assert response.status_code == 200
    token_proof = servers.token_requests[-1]["claims"]
    assert token_proof["htu"] == AS + "/token"
    last = servers.mcp_requests[-1]
    assert last["auth"] == f"DPoP {SECRET}-at1"
    record = store.load(KEY)
    assert record is not None
    assert record["tokens"]["token_type"] == "DPoP"
    jwk = record["dpop_key"]
    assert _thumbprint(jwk) == record["tokens"]["dpop_jkt"] == servers.bound[f"{SECRET}-at1"]
    if isinstance(store, FileTokenStore):
        files = list((tmp_path / "tokens").glob("*.json"))
        assert files and all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)
    # A new process: the same store, the same key, no new token.
    for _ in range(3):
        assert _call(_oauth(store=store)).status_code == 200
    assert servers.issued == 1
    assert len(servers.jtis) == 1 + 1 + 3  # every proof was fresh (checked by the servers)


def test_the_token_endpoint_nonce_is_retried_once(rsps: responses.RequestsMock) -> None:
    servers = Servers(rsps, as_nonce="as-nonce-1")
    assert _call(_oauth()).status_code == 200
    assert [r["claims"].get("nonce") for r in servers.token_requests] == [None, "as-nonce-1"]


def test_a_token_endpoint_nonce_loop_raises_after_one_retry(rsps: responses.RequestsMock) -> None:
    servers = Servers(rsps, as_nonce="loop")
    with pytest.raises(DPoPNonceError, match="again"):
        _call(_oauth())
    assert len(servers.token_requests) == 2


def test_a_nonce_challenge_without_a_nonce_is_not_retried(rsps: responses.RequestsMock) -> None:
    servers = Servers(rsps, as_nonce="x", nonce_header=False)
    with pytest.raises(DPoPNonceError, match="sent none"):
        _call(_oauth())
    assert len(servers.token_requests) == 1


def test_the_mcp_server_nonce_is_retried_once_then_remembered(rsps: responses.RequestsMock) -> None:
    servers = Servers(rsps, rs_nonce="rs-nonce-1")
    auth = _oauth()
    assert _call(auth).status_code == 200
    assert _call(auth).status_code == 200  # the remembered nonce: no second challenge
    nonces = [jwt.decode(r["proof"], options={"verify_signature": False}).get("nonce")
              for r in servers.mcp_requests if r["proof"]]
    assert nonces == [None, "rs-nonce-1", "rs-nonce-1"]


def test_an_mcp_server_nonce_loop_raises_after_one_retry(rsps: responses.RequestsMock) -> None:
    servers = Servers(rsps, rs_nonce="loop")
    started = time.monotonic()
    with pytest.raises(DPoPNonceError, match="MCP server"):
        _call(_oauth())
    assert time.monotonic() - started < 10
    assert len([r for r in servers.mcp_requests if r["proof"]]) == 2


def test_a_nonce_retry_then_a_new_token_then_a_new_nonce_succeeds(
    rsps: responses.RequestsMock,
) -> None:
    """Nonce demands separated by an authorization are not a loop."""

    class Scripted(Servers):
        script = [
            (401, 'DPoP error="use_dpop_nonce"', "n1"),
            (401, 'DPoP error="invalid_token"', None),  # the token was revoked meanwhile
            (401, 'DPoP error="use_dpop_nonce"', "n2"),  # and the nonce rotated
        ]

        def mcp(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
            proof = request.headers.get("DPoP")
            if not (proof and self.script):
                return super().mcp(request)
            self.mcp_requests.append({"auth": request.headers.get("Authorization"), "proof": proof})
            status, challenge, nonce = self.script.pop(0)
            headers = {"WWW-Authenticate": challenge, **({"DPoP-Nonce": nonce} if nonce else {})}
            return status, headers, ""

    servers = Scripted(rsps)
    assert _call(_oauth()).status_code == 200
    sent = [(r["auth"], jwt.decode(r["proof"], options={"verify_signature": False}).get("nonce"))
            for r in servers.mcp_requests if r["proof"]]
    assert sent == [
        (f"DPoP {SECRET}-at1", None),
        (f"DPoP {SECRET}-at1", "n1"),
        (f"DPoP {SECRET}-at2", "n1"),
        (f"DPoP {SECRET}-at2", "n2"),
    ]


def test_a_bearer_answer_to_a_proof_is_used_as_bearer(rsps: responses.RequestsMock) -> None:
    """RFC 9449 §5: a server that ignores the proof issues a bearer token; it goes out as Bearer."""
    servers = Servers(rsps, token_type="Bearer")
    store = MemoryTokenStore()
    _call(_oauth(store=store))
    record = store.load(KEY)
    assert record is not None and record["tokens"]["token_type"] == "Bearer"
    assert servers.mcp_requests[-1]["auth"] == f"Bearer {SECRET}-at1"
    assert servers.mcp_requests[-1]["proof"] is None


def test_choosing_dpop(rsps: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch,
                       caplog: pytest.LogCaptureFixture) -> None:
    # The AS accepts no ES256 proofs: auto -> bearer, dpop=True -> a clear error.
    servers = Servers(rsps, meta=_as_meta(dpop_signing_alg_values_supported=["RS256"]))
    with pytest.raises(DPoPError, match="ES256"):
        _call(_oauth(dpop=True))
    store = MemoryTokenStore()
    assert _call(_oauth(store=store)).status_code == 200
    record = store.load(KEY)
    assert record is not None and "dpop_key" not in record
    assert record["tokens"]["token_type"] == "Bearer"
    assert servers.token_requests[-1]["proof"] is None
    from mcpsync.auth._binding import Binding

    flow = _oauth()._binding(MCP)
    assert isinstance(flow, Binding)
    meta = _as_meta(dpop_signing_alg_values_supported=["ES256"])
    # The AS offers DPoP; the MCP server decides: nothing said (a Bearer-only server) -> bearer;
    # a DPoP challenge or DPoP in its metadata -> DPoP; its algorithms without ES256 -> bearer.
    choose = flow.dpop.for_new_tokens
    assert choose(meta, None) is None
    assert choose(meta, {"bearer_methods_supported": ["header"]}) is None
    assert choose(meta, None, offered=True) is not None
    assert choose(meta, {"dpop_signing_alg_values_supported": ["ES256"]}) is not None
    assert choose(meta, {"dpop_signing_alg_values_supported": ["RS256"]}, offered=True) is None
    with pytest.raises(DPoPError, match="MCP server"):
        choose(meta, {"dpop_signing_alg_values_supported": ["RS256"], "dpop_bound_access_tokens_required": True})
    assert _oauth(dpop=True)._binding(MCP).dpop.for_new_tokens(meta, None) is not None  # type: ignore[union-attr]
    assert choose(_as_meta(), None, offered=True) is None  # the AS does not offer it
    # Offered, but cryptography is missing: auto warns once and uses bearer tokens.
    monkeypatch.setattr(_dpop.importlib.util, "find_spec", lambda name: None)
    with caplog.at_level(logging.WARNING, logger="mcpsync.auth"):
        assert choose(meta, None, offered=True) is None
        assert choose(meta, None, offered=True) is None
    assert sum("mcpsync[dpop]" in r.getMessage() for r in caplog.records) == 1
    # ... but a resource that requires DPoP-bound tokens gets the key.
    assert choose(meta, {"dpop_bound_access_tokens_required": True}) is not None


def test_dpop_token_type_without_a_proof_is_refused(rsps: responses.RequestsMock) -> None:
    Servers(rsps)
    rsps.upsert(
        responses.POST,
        AS + "/token",
        json={"access_token": f"{SECRET}-at9", "token_type": "DPoP", "expires_in": 60},
    )
    with pytest.raises(TokenRequestError, match="unsupported token type"):
        _call(_oauth(dpop=False))


def test_no_dpop_secret_in_logs_errors_or_reprs(
    rsps: responses.RequestsMock, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    store = FileTokenStore(tmp_path / "tokens")
    servers = Servers(rsps, rs_nonce="loop")
    auth = _oauth(store=store)
    texts: list[str] = []
    with pytest.raises(DPoPNonceError) as info:
        _call(auth)
    texts += [str(info.value), repr(info.value), repr(auth), repr(store)]
    record = store.load(KEY)
    assert record is not None
    key = DPoPKey.from_jwk(record["dpop_key"])
    texts.append(repr(key))
    texts += [r.getMessage() for r in caplog.records] + [str(r.args) for r in caplog.records]
    secrets = [record["dpop_key"]["d"], SECRET]
    secrets += [r["proof"] for r in servers.mcp_requests if r["proof"]]
    leaked = [t for t in texts for s in secrets if s in t]
    assert not leaked, leaked
    assert any(r.name == "mcpsync.auth" for r in caplog.records)
