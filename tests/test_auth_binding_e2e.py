"""Tokens go only to the server they were issued for; pre-registered secrets only to their issuer.

Real peers: oidc-provider (``tests/auth_server/server.mjs``) and the official SDK's
Bearer-only server (``sdk_bearer_server.py``), which logs every ``Authorization`` header it
receives (``/test/seen``): two of them play a "good" server and an "evil" one configured
beside it.  For the issuer binding, ``resource_server.py --switchable`` moves its metadata to
a second authorization server, a raw HTTP server written here that logs every byte it gets.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

import mcpsync
from mcpsync import ClientGroup
from mcpsync.auth import (
    IssuerMismatchError,
    LoopbackLogin,
    MemoryTokenStore,
    OAuth,
    ResourceMismatchError,
    UnboundServerError,
)
from tests.auth_server.conftest_auth import browse, oidc_provider, protected_server, sdk_bearer_server
from tests.contrib_support import free_port

pytestmark = pytest.mark.timeout(120)


class Logins:
    """An ``open_browser`` that logs in (headless) and counts the logins per resource."""

    def __init__(self) -> None:
        self.resources: list[str] = []

    def __call__(self, url: str) -> bool:
        self.resources.append(parse_qs(urlsplit(url).query)["resource"][0])
        return browse(url)


def _seen(mcp: str) -> list[str]:
    return list(requests.get(mcp.rsplit("/", 1)[0] + "/test/seen", timeout=5).json()["authorization"])


def _tokens(*stores_and_keys: tuple[MemoryTokenStore, str]) -> set[str]:
    found = set()
    for store, key in stores_and_keys:
        record = store.load(key)
        assert record is not None
        found.add(record["tokens"]["access_token"])
    return found


@pytest.fixture
def two_servers() -> Iterator[tuple[str, str]]:
    with oidc_provider() as issuer, sdk_bearer_server(issuer) as good, sdk_bearer_server(issuer) as evil:
        yield good, evil


def test_a_group_with_one_oauth_gives_each_server_its_own_tokens(two_servers: tuple[str, str]) -> None:
    good, evil = two_servers
    store, logins = MemoryTokenStore(), Logins()
    config = {"mcpServers": {"good": {"url": good, "type": "http"}, "evil": {"url": evil, "type": "http"}}}
    auth = OAuth(store=store, login=LoopbackLogin(open_browser=logins, timeout=30), dpop=False)
    with ClientGroup.from_config(config, auth=auth, timeout=20) as group:
        for _ in range(3):
            assert group["good"].call_tool("whoami").text == "alice"
            assert group["evil"].call_tool("whoami").text == "alice"
    assert sorted(logins.resources) == sorted([good, evil])  # one login each, never again
    good_token, evil_token = _tokens((store, good)), _tokens((store, evil))
    assert good_token != evil_token
    assert not good_token & set(h.split(" ", 1)[1] for h in _seen(evil))
    assert not evil_token & set(h.split(" ", 1)[1] for h in _seen(good))


def test_one_oauth_on_two_clients_never_sends_one_servers_token_to_the_other(
    two_servers: tuple[str, str],
) -> None:
    good, evil = two_servers
    store, logins = MemoryTokenStore(), Logins()
    auth = OAuth(store=store, login=LoopbackLogin(open_browser=logins, timeout=30), dpop=False)
    with mcpsync.Client.http(good, auth=auth, timeout=20) as a, mcpsync.Client.http(evil, auth=auth, timeout=20) as b:
        for _ in range(4):
            assert a.call_tool("whoami").text == "alice"
            assert b.call_tool("whoami").text == "alice"
    assert logins.resources == [good, evil]
    good_tokens = {h.split(" ", 1)[1] for h in _seen(good)}
    assert good_tokens and not good_tokens & {h.split(" ", 1)[1] for h in _seen(evil)}


def test_an_oauth_bound_to_one_server_sends_nothing_to_another(two_servers: tuple[str, str]) -> None:
    good, evil = two_servers
    store, logins = MemoryTokenStore(), Logins()
    auth = OAuth(store=store, login=LoopbackLogin(open_browser=logins, timeout=30), server_url=good, dpop=False)
    config = {"mcpServers": {"good": {"url": good, "type": "http"}, "evil": {"url": evil, "type": "http"}}}
    with ClientGroup.from_config(config, auth=auth, timeout=20) as group:
        assert group["good"].call_tool("whoami").text == "alice"
        with pytest.raises(UnboundServerError, match="give each server an OAuth"):
            group["evil"].call_tool("whoami")
        assert group["good"].call_tool("whoami").text == "alice"
    assert logins.resources == [good]
    assert _seen(evil) == []  # not even a stale token went there
    assert store.load(evil) is None


# -- pre-registered credentials stay with their issuer --------------------------------------------


class LoggingAS:
    """A second authorization server that logs every byte it receives and gives out codes.

    It serves RFC 8414 metadata for itself, redirects ``/authorize`` straight back with a
    code, and answers the token endpoint: what a hostile or merely different AS would do
    to collect a client secret that was never meant for it.
    """

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.issuer = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="logging-as", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        data += conn.recv(65536) or b"\r\n\r\n"
                    head, _, body = data.partition(b"\r\n\r\n")
                    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                                   if line.lower().startswith(b"content-length:")), 0)
                    while len(body) < length:
                        body += conn.recv(65536) or b"x" * length
                except OSError:
                    continue
                self.received.append(head + b"\r\n\r\n" + body)
                conn.sendall(self._answer(head.split(b" ")[1].decode()))

    def _answer(self, target: str) -> bytes:
        path, _, query = target.partition("?")
        if path.startswith("/.well-known/"):
            body = json.dumps({
                "issuer": self.issuer, "authorization_endpoint": self.issuer + "/authorize",
                "token_endpoint": self.issuer + "/token", "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            }).encode()
            return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" \
                   b"Connection: close\r\n\r\n%s" % (len(body), body)
        if path == "/authorize":
            q = {k: v[0] for k, v in parse_qs(query).items()}
            location = f"{q['redirect_uri']}?code=stolen&state={q['state']}&iss={self.issuer}"
            return b"HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" \
                   % location.encode()
        body = b'{"access_token": "as2-token", "token_type": "Bearer", "expires_in": 60}'
        return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" \
               b"Connection: close\r\n\r\n%s" % (len(body), body)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def _preregister(issuer: str, port: int) -> tuple[str, str]:
    """A confidential client registered at *issuer* out of band (as an admin would)."""
    reply = requests.post(issuer + "/reg", json={
        "redirect_uris": [f"http://127.0.0.1:{port}/callback"], "application_type": "native",
        "token_endpoint_auth_method": "client_secret_basic", "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"], "scope": "openid offline_access mcp:read mcp:write",
    }, timeout=10)
    assert reply.status_code == 201, reply.text
    return reply.json()["client_id"], reply.json()["client_secret"]


def _revoke(issuer: str, client: tuple[str, str], token: str) -> None:
    reply = requests.post(issuer + "/token/revocation", data={"token": token}, auth=client, timeout=10)
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("given", [True, False], ids=["issuer-given", "first-issuer-seen"])
def test_a_preregistered_secret_never_reaches_another_authorization_server(given: bool) -> None:
    second = LoggingAS()
    try:
        with oidc_provider() as issuer, protected_server(issuer) as mcp:
            port = free_port()
            client_id, secret = _preregister(issuer, port)
            store = MemoryTokenStore()

            def oauth() -> OAuth:  # a new process each time: what it knows comes from the store
                return OAuth(store=store, client_id=client_id, client_secret=secret,
                             issuer=issuer if given else None,
                             login=LoopbackLogin(open_browser=browse, timeout=30, port=port))

            with mcpsync.Client.http(mcp, auth=oauth(), timeout=20) as client:
                assert client.call_tool("whoami").text == "alice"
            record = store.load(mcp)
            assert record is not None
            # The server revokes the grant and names another authorization server.
            _revoke(issuer, (client_id, secret), record["tokens"]["refresh_token"])
            requests.get(mcp.rsplit("/", 1)[0] + "/test/switch", params={"issuer": second.issuer}, timeout=5)
            with pytest.raises(mcpsync.McpError) as info:  # noqa: SIM117
                with mcpsync.Client.http(mcp, auth=oauth(), timeout=20) as client:
                    client.call_tool("whoami")
    finally:
        second.close()
    basic = base64.b64encode(f"{client_id}:{secret}".encode())
    seen = b"".join(second.received)
    assert secret.encode() not in seen and basic not in seen and client_id.encode() not in seen
    assert second.received  # it was asked for its metadata, and nothing more
    assert all(r.startswith(b"GET /.well-known/") for r in second.received)
    assert isinstance(info.value, IssuerMismatchError) and "pre-registered" in str(info.value)
    assert store.load(mcp)["client_issuer"] == issuer  # type: ignore[index]


# -- resource metadata must name this server (RFC 9728 §3.3) ------------------------------------------


def test_a_server_claiming_its_whole_origin_is_refused_unless_allowed() -> None:
    with oidc_provider() as issuer:
        base_probe = "http://127.0.0.1:{port}"
        port = free_port()
        origin = base_probe.format(port=port)
        with protected_server(issuer, "--port", str(port), "--prm-resource", origin) as mcp:
            logins = Logins()
            auth = OAuth(store=MemoryTokenStore(), login=LoopbackLogin(open_browser=logins, timeout=30))
            with pytest.raises(ResourceMismatchError):  # noqa: SIM117
                with mcpsync.Client.http(mcp, auth=auth, timeout=20) as client:
                    client.list_tools()
            assert logins.resources == []  # no login, no token for the whole origin
            # Opting in to prefixes: the origin is requested as the resource, and it works.
            lenient = OAuth(store=MemoryTokenStore(), login=LoopbackLogin(open_browser=logins, timeout=30),
                            resource_prefix=True)
            with mcpsync.Client.http(mcp, auth=lenient, timeout=20) as client:
                assert client.call_tool("whoami").text == "alice"
            assert logins.resources == [origin]


# -- a server echoing the token in a JSON-RPC error --------------------------------------------------


def test_a_token_echoed_in_a_json_rpc_error_is_masked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    with oidc_provider() as issuer, protected_server(issuer, "--json") as mcp:
        store = MemoryTokenStore()
        auth = OAuth(store=store, login=LoopbackLogin(open_browser=browse, timeout=30), dpop=False)
        with mcpsync.Client.http(mcp, auth=auth, timeout=20) as client:
            with pytest.raises(mcpsync.ServerError) as info:
                client.call_tool("leak")
        record = store.load(mcp)
        assert record is not None
        token = record["tokens"]["access_token"]
        error = info.value
        texts: list[Any] = [str(error), repr(error), error.message, json.dumps(error.data)]
        texts += [r.getMessage() for r in caplog.records]
        assert "[redacted]" in error.message and "is not welcome here" in error.message
        assert not [t for t in texts if token in t]
