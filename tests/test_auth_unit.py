"""Unit tests of the auth pieces with ``responses``: header parsing, discovery order, issuer
and ``iss`` checks, scope selection, URL policy, the 401/403 hook, refresh races, the
loopback receiver, and the secrets gate (no secret in logs, errors or reprs)."""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
import responses

from mcpsync.auth import (
    AuthError,
    CallbackError,
    DiscoveryError,
    IssuerMismatchError,
    LoginTimeout,
    LoopbackLogin,
    MemoryTokenStore,
    OAuth,
    PKCENotSupportedError,
    ResourceMismatchError,
    SSRFBlockedError,
    StateMismatchError,
    TokenStoreError,
)
from mcpsync.auth._discovery import (
    UrlPolicy,
    canonical_resource,
    parse_www_authenticate,
    resource_matches,
)
from mcpsync.auth._login import new_verifier, s256_challenge
from tests.contrib_support import free_port

pytestmark = pytest.mark.timeout(30)

MCP = "https://mcp.example.com/api/mcp"
AS = "https://auth.example.com/tenant"
SECRET = "canary-7f3e-secret"


# -- WWW-Authenticate ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            'Bearer resource_metadata="https://a/b", scope="x y"',
            {"resource_metadata": "https://a/b", "scope": "x y"},
        ),
        (
            'Basic realm="a, b", Bearer error="insufficient_scope", scope="r w"',
            {"error": "insufficient_scope", "scope": "r w"},
        ),
        ("Bearer realm=example,scope=x", {"realm": "example", "scope": "x"}),
        (
            'bearer error_description="say \\"hi\\", ok"',
            {"error_description": 'say "hi", ok'},
        ),
        (
            'DPoP algs="ES256", Bearer resource_metadata="https://a/b"',
            {"resource_metadata": "https://a/b"},
        ),
        ('Basic realm="x"', {}),
        ("", {}),
        ('Bearer SCOPE="a", scope="b"', {"scope": "a"}),
    ],
)
def test_parse_www_authenticate(header: str, expected: dict[str, str]) -> None:
    assert parse_www_authenticate(header) == expected


@pytest.mark.parametrize(
    ("header", "dpop"),
    [
        ('Bearer resource_metadata="https://a/b", DPoP algs="ES256 PS256"', True),
        ('DPoP resource_metadata="https://a/b"', True),  # the conformance suite's DPoP servers
        ('Bearer error="invalid_token", error_description="expected \'Bearer\', not DPoP"', False),
        ('Basic realm="DPoP, Bearer", Bearer scope="x"', False),  # "DPoP" inside a quoted value
        ('Bearer realm=x,dpop algs=ES256', True),  # case-insensitive scheme, no spaces
        ("", False),
        (None, False),
    ],
)
def test_a_dpop_challenge_among_several(header: str | None, dpop: bool) -> None:
    from mcpsync.auth._discovery import offers_dpop

    assert offers_dpop(header) is dpop


def test_canonical_resource_and_matching() -> None:
    assert (
        canonical_resource("HTTPS://MCP.Example.com:443/api/mcp/#frag")
        == "https://mcp.example.com/api/mcp"
    )
    # RFC 9728 §3.3: the server's own URL (canonical form) ...
    assert resource_matches("HTTPS://mcp.example.com:443/api/mcp/", MCP)
    # ... a prefix only when asked for (resource_prefix=True) ...
    for prefix in ("https://mcp.example.com/api", "https://mcp.example.com"):
        assert not resource_matches(prefix, MCP)
        assert not resource_matches(prefix, MCP, "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp")
        assert resource_matches(prefix, MCP, prefix=True)
    # ... and the origin only in the origin's own (root) metadata document.
    root = "https://mcp.example.com/.well-known/oauth-protected-resource"
    assert resource_matches("https://mcp.example.com", MCP, root)
    assert not resource_matches("https://mcp.example.com/api", MCP, root)
    assert not resource_matches("https://mcp.example.com", MCP, "https://mcp.example.com/x/prm.json")
    for other in ("https://mcp.example.com/ap", "https://evil.example.com/api/mcp",
                  "http://mcp.example.com/api/mcp", "https://mcp.example.com/api/mcp/more"):
        assert not resource_matches(other, MCP, root, prefix=True)


def test_pkce_s256_known_vector() -> None:
    # RFC 7636 appendix B.
    assert (
        s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    )
    v = new_verifier()
    assert 43 <= len(v) <= 128 and v != new_verifier()


# -- URL policy (F2/F3) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data",
        "https://169.254.169.254/x",
        "https://127.0.0.1/x",
        "https://0x7f.1/x",
        "https://[::ffff:127.0.0.1]/x",
        "https://10.0.0.5/x",
        "https://localhost/x",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "http://auth.example.com/x",
        "https://user:pw@auth.example.com/",
    ],
)
def test_public_server_may_not_send_us_elsewhere(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = UrlPolicy("https://93.184.216.34/mcp")  # a public literal: no DNS needed
    with pytest.raises((SSRFBlockedError, DiscoveryError)):
        policy.check(url, "test")


def test_loopback_server_may_use_loopback_http() -> None:
    policy = UrlPolicy("http://127.0.0.1:8000/mcp")
    assert policy.check("http://127.0.0.1:9000/token", "t")
    with pytest.raises(SSRFBlockedError):
        policy.check("http://169.254.169.254/", "t")


# -- discovery order and validation (with responses) -----------------------------------------------


def _as_meta(issuer: str = AS, **extra: Any) -> dict[str, Any]:
    meta = {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
        "registration_endpoint": issuer + "/register",
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "response_types_supported": ["code"],
    }
    meta.update(extra)
    return meta


def _oauth(**kw: Any) -> OAuth:
    kw.setdefault("login", LoopbackLogin(open_browser=_fake_browser, timeout=5))
    return OAuth(
        store=kw.pop("store", MemoryTokenStore()),
        server_url=MCP,
        resolve_hosts=False,
        **kw,
    )


_BROWSER_PARAMS: dict[str, str] = {"code": SECRET + "-code"}


def _fake_browser(url: str) -> bool:
    """Follow the authorization URL: call the loopback receiver like an AS redirect would."""
    q = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    params = {"state": q["state"], **_BROWSER_PARAMS}
    # http.client, not requests: urllib3's DEBUG log of *this test's* request line
    # would otherwise show the code to the secrets gate.
    target = urlsplit(q["redirect_uri"])
    conn = http.client.HTTPConnection(target.hostname, target.port, timeout=5)
    try:
        conn.request("GET", target.path + "?" + urlencode(params))
        conn.getresponse().read()
    finally:
        conn.close()
    return True


def _token_reply(n: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "access_token": f"{SECRET}-at{n}",
        "refresh_token": f"{SECRET}-rt{n}",
        "token_type": "Bearer",
        "expires_in": 3600,
        **extra,
    }


def _mount_metadata(
    rsps: responses.RequestsMock,
    *,
    meta: dict[str, Any] | None = None,
    **prm: Any,
) -> None:
    """The MCP server's RFC 9728 metadata (plus *prm*) and the AS's RFC 8414 metadata."""
    rsps.add(
        responses.GET,
        "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp",
        json={"resource": MCP, "authorization_servers": [AS], **prm},
    )
    rsps.add(
        responses.GET,
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant",
        json=meta or _as_meta(),
    )


def _mount_happy_path(
    rsps: responses.RequestsMock, *, meta: dict[str, Any] | None = None
) -> None:
    _mount_metadata(rsps, meta=meta, scopes_supported=["read"])
    rsps.add(responses.POST, AS + "/register", json={"client_id": "cid"}, status=201)
    rsps.add(responses.POST, AS + "/token", json=_token_reply())


@pytest.fixture
def rsps() -> Any:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add_passthru("http://127.0.0.1")  # the loopback receiver is real
        yield mock


def _protected(
    rsps: responses.RequestsMock, *, token_ok: str = f"{SECRET}-at1"
) -> None:
    def mcp(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        if request.headers.get("Authorization") == f"Bearer {token_ok}":
            return 200, {}, "{}"
        return 401, {"WWW-Authenticate": 'Bearer scope="read"'}, ""

    rsps.add_callback(responses.POST, MCP, callback=mcp)


def test_full_flow_discovery_order_and_parameters(rsps: responses.RequestsMock) -> None:
    _mount_happy_path(rsps)
    _protected(rsps)
    with requests.Session() as s:
        r = s.post(MCP, data=b"{}", auth=_oauth(scopes=["extra"]))
    assert r.status_code == 200 and len(r.history) == 1
    urls = [c.request.url for c in rsps.calls]
    assert (
        urls[1]
        == "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp"
    )
    assert (
        urls[2]
        == "https://auth.example.com/.well-known/oauth-authorization-server/tenant"
    )
    reg = json.loads(rsps.calls[3].request.body)
    assert (
        reg["grant_types"] == ["authorization_code", "refresh_token"]
        and reg["application_type"] == "native"
    )
    token = parse_qs(rsps.calls[4].request.body)
    assert token["resource"] == [MCP] and token["grant_type"] == ["authorization_code"]
    assert set(token) >= {"code", "code_verifier", "redirect_uri", "client_id"}


def test_as_metadata_falls_through_the_spec_order(rsps: responses.RequestsMock) -> None:
    rsps.add(
        responses.GET,
        "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp",
        status=404,
    )
    rsps.add(
        responses.GET,
        "https://mcp.example.com/.well-known/oauth-protected-resource",
        json={"resource": "https://mcp.example.com", "authorization_servers": [AS]},
    )
    for url in (
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant",
        "https://auth.example.com/.well-known/openid-configuration/tenant",
    ):
        rsps.add(responses.GET, url, status=404)
    rsps.add(responses.GET, AS + "/.well-known/openid-configuration", json=_as_meta())
    rsps.add(responses.POST, AS + "/register", json={"client_id": "cid"}, status=201)
    rsps.add(responses.POST, AS + "/token", json=_token_reply())
    _protected(rsps)
    with requests.Session() as s:
        assert s.post(MCP, data=b"{}", auth=_oauth()).status_code == 200
    assert [c.request.url for c in rsps.calls][1:6] == [
        "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp",
        "https://mcp.example.com/.well-known/oauth-protected-resource",
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant",
        "https://auth.example.com/.well-known/openid-configuration/tenant",
        AS + "/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    ("meta", "error"),
    [
        (_as_meta(issuer="https://auth.example.com/other"), IssuerMismatchError),
        (
            {
                k: v
                for k, v in _as_meta().items()
                if k != "code_challenge_methods_supported"
            },
            PKCENotSupportedError,
        ),
        (_as_meta(code_challenge_methods_supported=["plain"]), PKCENotSupportedError),
        (_as_meta(token_endpoint="https://169.254.169.254/token"), SSRFBlockedError),
    ],
)
def test_bad_server_metadata_is_refused(
    rsps: responses.RequestsMock, meta: dict[str, Any], error: type[Exception]
) -> None:
    _mount_happy_path(rsps, meta=meta)
    _protected(rsps)
    with requests.Session() as s, pytest.raises(error):
        s.post(MCP, data=b"{}", auth=_oauth())
    assert not any(
        "/authorize" in c.request.url or "/token" in c.request.url for c in rsps.calls
    )


def test_resource_mismatch_is_refused(rsps: responses.RequestsMock) -> None:
    rsps.add(
        responses.GET,
        "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp",
        json={
            "resource": "https://evil.example.com/api/mcp",
            "authorization_servers": [AS],
        },
    )
    _protected(rsps)
    with requests.Session() as s, pytest.raises(ResourceMismatchError):
        s.post(MCP, data=b"{}", auth=_oauth())


@pytest.mark.parametrize(
    ("iss", "advertised", "ok"),
    [
        (None, False, True),
        (AS, True, True),
        (AS, False, True),
        ("https://evil.example.com", False, False),
        (None, True, False),
        ("https://evil.example.com", True, False),
    ],
)
def test_iss_table(
    rsps: responses.RequestsMock, iss: str | None, advertised: bool, ok: bool
) -> None:
    _mount_happy_path(
        rsps, meta=_as_meta(authorization_response_iss_parameter_supported=advertised)
    )
    _protected(rsps)
    _BROWSER_PARAMS.pop("iss", None)
    if iss is not None:
        _BROWSER_PARAMS["iss"] = iss
    try:
        with requests.Session() as s:
            if ok:
                assert s.post(MCP, data=b"{}", auth=_oauth()).status_code == 200
            else:
                with pytest.raises(IssuerMismatchError):
                    s.post(MCP, data=b"{}", auth=_oauth())
                assert not any(c.request.url == AS + "/token" for c in rsps.calls)
    finally:
        _BROWSER_PARAMS.pop("iss", None)


def test_callback_error_is_reported(rsps: responses.RequestsMock) -> None:
    _mount_happy_path(rsps)
    _protected(rsps)
    _BROWSER_PARAMS.update(error="access_denied")
    try:
        with requests.Session() as s, pytest.raises(CallbackError) as info:
            s.post(MCP, data=b"{}", auth=_oauth())
        assert info.value.error == "access_denied"
    finally:
        _BROWSER_PARAMS.pop("error")


# -- refresh -------------------------------------------------------------------------------------


def _stored(store: MemoryTokenStore, *, expires_at: float) -> None:
    redirect = f"http://127.0.0.1:{free_port()}/callback"
    store.save(
        canonical_resource(MCP),
        {
            "tokens": {
                "access_token": f"{SECRET}-old",
                "refresh_token": f"{SECRET}-rt0",
                "token_type": "Bearer",
                "expires_at": expires_at,
                "issuer": AS,
                "resource": MCP,
                "scope": "read",
            },
            "clients": {
                AS: {
                    "issuer": AS,
                    "client_id": "cid",
                    "token_endpoint_auth_method": "none",
                    "redirect_uris": [redirect],
                    "source": "dcr",
                }
            },
            "server_metadata": _as_meta(),
        },
    )


def test_eight_threads_with_an_expired_token_make_one_refresh(
    rsps: responses.RequestsMock,
) -> None:
    store = MemoryTokenStore()
    _stored(store, expires_at=time.time() - 10)
    calls: list[dict[str, list[str]]] = []

    def token(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        calls.append(parse_qs(str(request.body)))
        time.sleep(0.2)  # a slow AS widens the race window
        return 200, {}, json.dumps(_token_reply(2))

    rsps.add_callback(responses.POST, AS + "/token", callback=token)
    _protected(rsps, token_ok=f"{SECRET}-at2")
    auth = _oauth(store=store)
    barrier = threading.Barrier(8)
    codes: list[int] = []

    def call() -> None:
        barrier.wait(5)
        with requests.Session() as s:
            codes.append(s.post(MCP, data=b"{}", auth=auth).status_code)

    threads = [threading.Thread(target=call, name=f"refresh-{i}") for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert codes == [200] * 8
    assert len(calls) == 1 and calls[0]["grant_type"] == ["refresh_token"]
    assert calls[0]["resource"] == [MCP]
    saved = store.load(canonical_resource(MCP))
    assert saved is not None and saved["tokens"]["refresh_token"] == f"{SECRET}-rt2"


def test_invalid_grant_keeps_the_registration_and_logs_in_again(
    rsps: responses.RequestsMock,
) -> None:
    store = MemoryTokenStore()
    _stored(store, expires_at=time.time() - 10)
    rsps.add(responses.POST, AS + "/token", json={"error": "invalid_grant"}, status=400)
    _mount_metadata(rsps)
    rsps.add(responses.POST, AS + "/token", json=_token_reply())
    _protected(rsps)
    with requests.Session() as s:
        assert s.post(MCP, data=b"{}", auth=_oauth(store=store)).status_code == 200
    assert not any(
        c.request.url == AS + "/register" for c in rsps.calls
    )  # the stored client was reused


# -- step-up -------------------------------------------------------------------------------------


def test_step_up_requests_the_union_and_stops_when_useless(
    rsps: responses.RequestsMock,
) -> None:
    _mount_happy_path(rsps)
    scopes_seen: list[str] = []
    rsps.replace(
        responses.POST, AS + "/token", json=_token_reply()
    )  # no scope: as requested

    def mcp(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        if not request.headers.get("Authorization"):
            return 401, {"WWW-Authenticate": 'Bearer scope="read"'}, ""
        return (
            403,
            {
                "WWW-Authenticate": 'Bearer error="insufficient_scope", scope="read write"'
            },
            "",
        )

    rsps.add_callback(responses.POST, MCP, callback=mcp)
    orig = _BROWSER_PARAMS.copy()

    def browser(url: str) -> bool:
        scopes_seen.append(parse_qs(urlsplit(url).query).get("scope", [""])[0])
        return _fake_browser(url)

    with requests.Session() as s:
        r = s.post(
            MCP,
            data=b"{}",
            auth=_oauth(login=LoopbackLogin(open_browser=browser, timeout=5)),
        )
    assert r.status_code == 403
    # 401 -> login with "read"; 403 -> login with the union; the token then has both and
    # the server still refuses: no third login for the same scopes.
    assert scopes_seen == ["read", "read write"]
    assert _BROWSER_PARAMS == orig


# -- loopback receiver ------------------------------------------------------------------------


def test_loopback_ignores_strays_escapes_and_times_out() -> None:
    login = LoopbackLogin(timeout=5)
    with login.receiver() as receiver:
        receiver.state = "good"
        base = receiver.redirect_uri
        assert base.startswith("http://127.0.0.1:") and not base.endswith(":0/callback")
        assert (
            requests.get(
                base.replace("/callback", "/favicon.ico"), timeout=5
            ).status_code
            == 404
        )
        bad = requests.get(base, params={"state": "<script>", "code": "x"}, timeout=5)
        assert bad.status_code == 400 and "<script>" not in bad.text
        err = requests.get(
            base, params={"state": "good", "error": "<b>no</b>"}, timeout=5
        )
        assert "&lt;b&gt;" in err.text and "<b>" not in err.text
        assert receiver.wait("good", 5) == {"state": "good", "error": "<b>no</b>"}
    with login.receiver() as receiver, pytest.raises(LoginTimeout):
        receiver.wait("s", 0.2)


def test_an_idle_connection_does_not_hold_up_the_real_callback() -> None:
    """A local program (or a browser's preconnect) opens a connection and sends nothing."""
    import socket

    login = LoopbackLogin(timeout=5)
    with login.receiver() as receiver:
        receiver.state = "good"
        port = int(urlsplit(receiver.redirect_uri).port or 0)
        idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(3)]
        half = socket.create_connection(("127.0.0.1", port), timeout=5)
        half.sendall(b"GET /callback?state=go")  # a request line that never ends
        try:
            reply = requests.get(receiver.redirect_uri, params={"state": "good", "code": "c"}, timeout=5)
            assert reply.status_code == 200
            assert receiver.wait("good", 5) == {"state": "good", "code": "c"}
        finally:
            for sock in [*idle, half]:
                sock.close()
    # Closing the receiver ended every connection it still had open: nothing is left.
    with login.receiver() as receiver:
        port = int(urlsplit(receiver.redirect_uri).port or 0)
        lingering = socket.create_connection(("127.0.0.1", port), timeout=5)
        # Accepted (not just queued) before the close: a queued one would be reset, not shut.
        until = time.monotonic() + 5
        while not receiver._open and time.monotonic() < until:
            time.sleep(0.01)
        assert receiver._open
    try:
        assert lingering.recv(1) == b""  # the receiver shut it on close
    finally:
        lingering.close()


def test_open_browser_failure_prints_the_url(
    capsys: pytest.CaptureFixture[str],
) -> None:
    LoopbackLogin(open_browser=lambda url: False).open(
        "https://as.example/authorize?x=1"
    )
    assert "https://as.example/authorize?x=1" in capsys.readouterr().err


# -- secrets gate (F7) ----------------------------------------------------------------------------


def test_no_secret_in_logs_errors_or_reprs(
    rsps: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    store = MemoryTokenStore()
    _mount_happy_path(rsps)
    _protected(rsps)
    auth = _oauth(store=store, client_secret=None, client_id=None)
    texts: list[str] = []
    with requests.Session() as s:
        r = s.post(MCP, data=b"{}", auth=auth)
    assert r.status_code == 200
    texts += [repr(auth), str(auth), repr(store), repr(auth.login)]
    # Errors on the token path: the AS echoes the secret in its error description.
    rsps.replace(
        responses.POST,
        AS + "/token",
        json={"error": "invalid_grant", "error_description": f"bad {SECRET}-rt1"},
        status=400,
    )
    record = store.load(canonical_resource(MCP))
    assert record is not None
    record["tokens"]["expires_at"] = 0
    store.save(canonical_resource(MCP), record)
    auth2 = OAuth(
        store=store,
        server_url=MCP,
        resolve_hosts=False,
        client_id="cid",
        client_secret=SECRET + "-cs",
        login=None,
        redirect_uri="https://app.example/cb",
    )
    texts.append(repr(auth2))
    with requests.Session() as s:
        try:
            s.post(MCP, data=b"{}", auth=auth2)
        except AuthError as exc:
            texts += [str(exc), repr(exc), getattr(exc, "url", "")]
    with pytest.raises(StateMismatchError) as info:
        auth2.complete(
            f"https://app.example/cb?code={SECRET}-code&state={SECRET}-state"
        )
    texts += [str(info.value), repr(info.value)]
    texts += [record.getMessage() for record in caplog.records]
    texts += [str(record.args) for record in caplog.records]
    leaked = [t for t in texts if SECRET in t]
    assert not leaked, leaked
    assert any(
        "mcpsync.auth" == r.name for r in caplog.records
    )  # the flow did log something


# -- web-app flow: logins in progress ------------------------------------------------------


def test_abandoned_logins_do_not_pile_up_in_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpsync.auth import _login

    store = MemoryTokenStore()
    clock = [1_000.0]
    monkeypatch.setattr(_login.time, "time", lambda: clock[0])
    for i in range(20):  # twenty tabs opened, none finished
        _login.save_pending(store, "srv", {"state": f"s{i}", "verifier": f"v{i}"})
        clock[0] += 1
    record = store.load("srv#logins")
    assert record is not None and len(record["logins"]) == _login.MAX_PENDING
    # The newest still finish, once; the oldest were pushed out.
    pending, params = _login.take_pending(store, "srv", "https://app.example/cb?state=s19&code=c")
    assert (pending["state"], pending["verifier"], params["code"]) == ("s19", "v19", "c")
    for state in ("s19", "s0"):
        with pytest.raises(StateMismatchError):
            _login.take_pending(store, "srv", f"https://app.example/cb?state={state}&code=c")
    # Past the TTL the rest go at the next save; the last one taken removes the record.
    clock[0] += _login.PENDING_TTL + 1
    _login.save_pending(store, "srv", {"state": "late", "verifier": "v"})
    assert list(store.load("srv#logins")["logins"]) == [_login._state_name("late")]  # type: ignore[index]
    _login.take_pending(store, "srv", "https://app.example/cb?state=late&code=c")
    assert store.load("srv#logins") is None


def test_logins_started_at_once_are_all_kept() -> None:
    from mcpsync.auth import _login

    store = MemoryTokenStore()
    go = threading.Barrier(8)

    def start(i: int) -> None:
        go.wait(5)
        _login.save_pending(store, "srv", {"state": f"tab{i}"})

    threads = [threading.Thread(target=start, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    for i in range(8):
        pending, _ = _login.take_pending(store, "srv", f"https://app.example/cb?state=tab{i}")
        assert pending["state"] == f"tab{i}"


def test_a_login_begun_before_the_upgrade_still_finishes() -> None:
    from mcpsync.auth import _login

    store = MemoryTokenStore()
    store.save(_login._legacy_pending_key("srv", "old"), {"state": "old", "created": time.time()})
    pending, _ = _login.take_pending(store, "srv", "https://app.example/cb?state=old&code=c")
    assert pending["state"] == "old"
    assert store.load(_login._legacy_pending_key("srv", "old")) is None
    with pytest.raises(StateMismatchError):
        _login.take_pending(store, "srv", "https://app.example/cb?state=old&code=c")


# -- a refused request's body is read against a cap before the re-send ----------------------------


def test_the_resend_reads_a_huge_401_body_only_up_to_a_cap() -> None:
    """A hostile server answers 401 with 64 MiB of body (and would send more); meanwhile
    another process refreshed the token.  The re-send must not pull the body into memory."""
    import socket
    import tracemalloc

    body_size = 64 << 20
    store = MemoryTokenStore()
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    tokens = {"access_token": "old-token-1234", "token_type": "Bearer", "expires_at": time.time() + 3600}
    store.save(url, {"tokens": tokens})
    sent: list[str] = []

    def serve() -> None:
        # The refused request, then the re-send (on the same connection when the client kept it).
        while len(sent) < 2:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(10)
                while len(sent) < 2:
                    head = b""
                    while b"\r\n\r\n" not in head:
                        data = conn.recv(65536)
                        if not data:
                            break
                        head += data
                    if b"\r\n\r\n" not in head:
                        break  # the client closed this connection
                    authorization = next((line.split(b": ", 1)[1].decode() for line in head.split(b"\r\n")
                                          if line.lower().startswith(b"authorization:")), "")
                    sent.append(authorization)
                    if authorization == "Bearer new-token-5678":
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                        continue
                    # Another process refreshed while this request was on its way.
                    store.save(url, {"tokens": {**tokens, "access_token": "new-token-5678"}})
                    conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n"
                                 b"Content-Length: %d\r\n\r\n" % body_size)
                    chunk = b"x" * (1 << 20)
                    try:
                        for _ in range(body_size // len(chunk)):
                            conn.sendall(chunk)
                    except OSError:
                        break  # the client stopped reading and closed: what it should do

    server = threading.Thread(target=serve, name="huge-401", daemon=True)
    server.start()
    auth = OAuth(store=store, server_url=url, resolve_hosts=False, login=None, redirect_uri="http://127.0.0.1:9/cb")
    tracemalloc.start()
    try:
        with requests.Session() as session:
            response = session.post(url, data=b"{}", auth=auth, timeout=20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        server.join(20)
        listener.close()
    assert response.status_code == 200 and response.content == b"{}"
    assert sent == ["Bearer old-token-1234", "Bearer new-token-5678"]
    assert peak < 8 << 20, f"{peak / (1 << 20):.0f} MiB held while re-sending"


def test_bindings_are_per_server_and_bounded(rsps: responses.RequestsMock) -> None:
    """One OAuth, several servers: a token goes only where its resource covers; a server
    that keeps naming new URLs cannot make it keep bindings without end."""
    from mcpsync.auth._oauth import MAX_SERVERS

    store = MemoryTokenStore()
    a, b = "https://a.example.com/mcp", "https://a.example.com/other/mcp"
    store.save(a, {"server": a, "tokens": {"access_token": f"{SECRET}-a", "resource": a, "bound_to": a}})
    store.save(b, {"server": b, "tokens": {"access_token": f"{SECRET}-b", "resource": b, "bound_to": b}})
    seen: list[tuple[str, str | None]] = []

    def record(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        seen.append((str(request.url), request.headers.get("Authorization")))
        return 200, {}, "{}"

    for url in (a, b, a + "/sub", "https://a.example.com/third"):
        rsps.add_callback(responses.POST, url, callback=record)
    auth = OAuth(store=store, resolve_hosts=False, login=None, redirect_uri="https://app.example/cb")
    with requests.Session() as session:
        for url in (a, b, a + "/sub", "https://a.example.com/third"):
            session.post(url, data=b"{}", auth=auth)
    assert seen == [(a, f"Bearer {SECRET}-a"), (b, f"Bearer {SECRET}-b"),
                    (a + "/sub", f"Bearer {SECRET}-a"), ("https://a.example.com/third", None)]
    for i in range(2 * MAX_SERVERS):
        auth._binding(f"https://s{i}.example.com/mcp")
    assert len(auth._bindings) == MAX_SERVERS
    # A record saved for another server under this key is refused, not used.
    pinned = OAuth(store=store, resolve_hosts=False, key=a, server_url=b, login=None, redirect_uri="https://x/cb")
    with pytest.raises(TokenStoreError, match="another MCP server"), requests.Session() as session:
        session.post(b, data=b"{}", auth=pinned)


def test_credentials_sent_are_masked_in_server_errors_and_excerpts() -> None:
    """A server that echoes the token it got: in a JSON-RPC error, or in text that mcpsync logs
    (always through excerpt()), e.g. an error reply for no request."""
    from mcpsync.auth import BearerToken
    from mcpsync.exceptions import error_from_response, excerpt

    token = f"{SECRET}-api-key-" + "x" * 300
    prepared = requests.Request("POST", MCP, auth=BearerToken(token)).prepare()
    assert prepared.headers["Authorization"] == f"Bearer {token}"  # sent: now remembered
    error = error_from_response({"code": -32602, "message": f"token {token} refused",
                                 "data": {"echo": [token], token: 1}})
    assert error.message == "token [redacted] refused" and error.data == {"echo": ["[redacted]"], "[redacted]": 1}
    # Cut at 200 characters, but masked first: not even the token's first part is shown.
    assert SECRET not in excerpt({"error": {"message": "bad " + token}})
    assert excerpt("short") == "short"
