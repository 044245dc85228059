"""The environment a stdio server gets: the safe default passes the network and TLS settings."""

from __future__ import annotations

import sys

import pytest

import mcpsync
from mcpsync.transports.stdio.process import default_environment, without_credentials

NETWORK = {
    "HTTP_PROXY": "http://proxy.corp:3128", "https_proxy": "http://proxy.corp:3128",
    "NO_PROXY": "localhost,.corp", "no_proxy": "localhost", "ALL_PROXY": "socks5://proxy.corp:1080",
    "SSL_CERT_FILE": "/etc/corp/ca.pem", "SSL_CERT_DIR": "/etc/corp/certs",
    "REQUESTS_CA_BUNDLE": "/etc/corp/ca.pem", "CURL_CA_BUNDLE": "/etc/corp/ca.pem",
    "NODE_EXTRA_CA_CERTS": "/etc/corp/ca.pem",
}


def test_network_and_tls_variables_pass_and_secrets_do_not() -> None:
    source = {**NETWORK, "PATH": "/usr/bin", "SECRET_KEY": "s3cret", "AWS_SECRET_ACCESS_KEY": "x",
              "DATABASE_URL": "postgres://u:p@db/x"}
    env = default_environment(source)
    assert env == {**NETWORK, "PATH": "/usr/bin"}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://alice:s3cret@proxy.corp:8080/", "http://proxy.corp:8080/"),
        ("http://alice@proxy.corp:8080", "http://proxy.corp:8080"),
        ("alice:p@ss@proxy.corp:8080", "proxy.corp:8080"),  # no scheme, '@' in the password
        ("http://proxy.corp:8080/a@b", "http://proxy.corp:8080/a@b"),  # '@' in the path only
        ("http://proxy.corp:8080", "http://proxy.corp:8080"),
    ],
)
def test_proxy_credentials_are_removed(url: str, expected: str) -> None:
    assert without_credentials(url) == expected
    assert default_environment({"HTTPS_PROXY": url, "http_proxy": url}) == {
        "HTTPS_PROXY": expected, "http_proxy": expected}


_SERVER = """\
import os
from mcpsync.testing import FakeServer
server = FakeServer("env", "1")

@server.tool()
def env(name: str) -> str:
    return os.environ.get(name, "<unset>")

server.run_stdio()
"""


@pytest.mark.timeout(60)
def test_a_real_server_sees_the_proxy_but_not_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://alice:s3cret@proxy.corp:3128")
    monkeypatch.setenv("NODE_EXTRA_CA_CERTS", "/etc/corp/ca.pem")
    monkeypatch.setenv("SECRET_KEY", "s3cret")
    with mcpsync.Client.stdio(sys.executable, args=["-c", _SERVER], timeout=30) as client:
        def seen(name: str) -> str | None:
            return client.call_tool("env", {"name": name}).text

        assert seen("HTTPS_PROXY") == "http://proxy.corp:3128"
        assert seen("NODE_EXTRA_CA_CERTS") == "/etc/corp/ca.pem"
        assert seen("SECRET_KEY") == "<unset>"
    # env= still sets anything, credentials included, when a server needs them.
    with mcpsync.Client.stdio(sys.executable, args=["-c", _SERVER], timeout=30,
                              env={"HTTPS_PROXY": "http://bob:pw@proxy.corp:3128"}) as client:
        assert client.call_tool("env", {"name": "HTTPS_PROXY"}).text == "http://bob:pw@proxy.corp:3128"
