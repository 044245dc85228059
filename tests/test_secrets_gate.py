"""Secrets gate for the HTTP transports (RELIABILITY F7, D4, C1; auth flows: tests/test_auth_unit.py).

HTTP flows run against a raw-socket server (``tests/servers/http_fault.py``) with recognisable
canary secrets: a bearer token and an API key in headers, a server-assigned ``Mcp-Session-Id``,
a token in the URL's query string, and error bodies that echo all of them. Every log record
(root logger at DEBUG, so ``urllib3`` too), every exception's ``str``/``repr`` and the reprs of the
client and transport are searched; any canary found fails the test.

Exception: ``urllib3`` itself logs request lines, query string included, at DEBUG; that is
outside mcpsync's control and documented in docs/reliability.rst, so the URL canary is only
searched in mcpsync's own records. Header canaries are searched everywhere.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request, handshake

import mcpsync

pytestmark = pytest.mark.timeout(60)

TOKEN = f"canary-token-{uuid.uuid4().hex}"
API_KEY = f"canary-apikey-{uuid.uuid4().hex}"
SESSION = f"canary-session-{uuid.uuid4().hex}"
URL_TOKEN = f"canary-url-{uuid.uuid4().hex}"
HEADER_SECRETS = (TOKEN, API_KEY, SESSION)
ALL_SECRETS = (*HEADER_SECRETS, URL_TOKEN)
#: How servers and proxies echo credentials back: as header lines, key=value pairs and URLs.
ECHO = (
    f"Authorization: Bearer {TOKEN}; api_key={API_KEY}; Mcp-Session-Id: {SESSION};"
    f" url: http://127.0.0.1/mcp?api_key={URL_TOKEN}"
)
#: The same values echoed bare, with nothing saying they are secrets.
BARE_ECHO = f"you sent {TOKEN} {API_KEY} {SESSION} {URL_TOKEN}"


def make_client(url: str, **kw: Any) -> mcpsync.Client:
    kw.setdefault("timeout", 5)
    kw.setdefault("transport", "streamable-http")
    return mcpsync.Client.http(
        url + f"/mcp?api_key={URL_TOKEN}",
        headers={"Authorization": f"Bearer {TOKEN}", "X-Api-Key": API_KEY},
        listen=False,
        **kw,
    )


class Gate:
    """Collects texts to search: log records, exceptions and reprs."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self.caplog = caplog
        self.texts: list[tuple[str, str]] = []

    def exc(self, exc: BaseException, *, chain: bool = False) -> None:
        """Add ``exc``'s texts; with ``chain``, also its causes (what a logged traceback shows)."""
        while exc is not None:
            self.texts.append(("mcpsync", str(exc)))
            self.texts.append(("mcpsync", repr(exc)))
            for attr in ("body_excerpt", "stderr_tail", "message"):
                value = getattr(exc, attr, None)
                if isinstance(value, str):
                    self.texts.append(("mcpsync", value))
            if not chain:
                return
            exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]

    def add(self, text: object) -> None:
        self.texts.append(("mcpsync", str(text)))

    def check(self) -> None:
        texts = list(self.texts)
        for record in self.caplog.records:
            origin = "mcpsync" if record.name.startswith("mcpsync") else record.name
            texts.append((origin, record.getMessage()))
            if record.exc_info and record.exc_info[1] is not None:
                texts.append((origin, repr(record.exc_info[1])))
        leaks = [
            (origin, secret, text[:300])
            for origin, text in texts
            for secret in (ALL_SECRETS if origin == "mcpsync" else HEADER_SECRETS)
            if secret in text
        ]
        assert leaks == []
        assert any(r.name.startswith("mcpsync") for r in self.caplog.records), "nothing was logged"


@pytest.fixture
def gate(caplog: pytest.LogCaptureFixture) -> Gate:
    caplog.set_level(logging.DEBUG)
    return Gate(caplog)


def echo_result(request: Request, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.body["id"], "result": {"content": [{"type": "text", "text": text}]}}


def test_happy_path_session_and_close(gate: Gate) -> None:
    def handler(request: Request, conn: Conn) -> None:
        if not handshake(request, conn, session=SESSION):
            conn.respond(200, echo_result(request, "ok"))

    with FaultServer(handler) as server:
        client = make_client(server.url)
        with client:
            assert client.call_tool("echo", {}).text == "ok"
            gate.add(repr(client))
            gate.add(repr(client._conn.transport))  # type: ignore[union-attr]
            gate.add(client._conn.transport.describe())  # type: ignore[union-attr]
        assert server.requests[-1].method == "DELETE"  # the session id was really in use
        assert server.requests[-1].headers.get("mcp-session-id") == SESSION
    gate.check()


@pytest.mark.parametrize(
    ("status", "body"),
    [(status, "labelled") for status in (400, 401, 403, 404, 500, 502)]
    + [(404, "bare")]  # a 404 on a session becomes SessionExpired, which quotes no body
    + [(status, "bare") for status in (400, 401, 403, 500, 502)],
)
def test_error_bodies_echoing_secrets(gate: Gate, status: int, body: str) -> None:
    echo = ECHO if body == "labelled" else BARE_ECHO

    def handler(request: Request, conn: Conn) -> None:
        if not handshake(request, conn, session=SESSION):
            conn.respond(status, f"<html><p>{echo}</p></html>", ctype="text/html",
                         headers={"WWW-Authenticate": f'Bearer error="{TOKEN}"'} if status == 401 else None)

    with FaultServer(handler) as server, make_client(server.url) as client:
        with pytest.raises(mcpsync.McpError) as info:
            client.call_tool("echo", {})
        gate.exc(info.value)
    gate.check()


def test_json_rpc_error_body_on_http_error_status(gate: Gate) -> None:
    def handler(request: Request, conn: Conn) -> None:
        if not handshake(request, conn, session=SESSION):
            conn.respond(500, {"jsonrpc": "2.0", "id": request.body["id"], "error": {"code": -32000, "message": "boom", "data": ECHO}})

    with FaultServer(handler) as server, make_client(server.url) as client:
        with pytest.raises(mcpsync.McpError) as info:
            client.call_tool("echo", {})
        gate.exc(info.value)
        # A JSON-RPC error is the server's own data, kept verbatim in .data; only str/repr are checked.
        gate.texts = [(o, t) for o, t in gate.texts if ECHO not in t or "data" in t]
    gate.check()


def test_session_expiry(gate: Gate) -> None:
    def handler(request: Request, conn: Conn) -> None:
        if handshake(request, conn, session=SESSION):
            return
        conn.respond(404, f"no session {SESSION}", ctype="text/plain")

    with FaultServer(handler) as server, make_client(server.url) as client:
        with pytest.raises(mcpsync.McpError) as info:
            client.call_tool("echo", {})
        gate.exc(info.value)
    gate.check()


@pytest.mark.parametrize(
    "chain",
    [False, True],
)
def test_connection_refused_and_dropped(gate: Gate, chain: bool) -> None:
    with FaultServer(lambda r, c: None) as server:
        url = server.url
    client = make_client(url)  # nothing listens there any more
    with pytest.raises(mcpsync.McpError) as info:
        client.connect()
    gate.exc(info.value, chain=chain)
    client.close()

    def drop(request: Request, conn: Conn) -> None:
        if not handshake(request, conn, session=SESSION):
            conn.sock.close()

    with FaultServer(drop) as server, make_client(server.url) as client:
        with pytest.raises(mcpsync.McpError) as info:
            client.call_tool("echo", {})
        gate.exc(info.value)
    gate.check()


def test_server_stream_error_event_and_bad_session_header(gate: Gate) -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "initialize":
            # A session id that is not a valid header value, containing a secret.
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "x", "version": "0"}}}, headers={"Mcp-Session-Id": f"{SESSION} bad"})
        elif not handshake(request, conn, session=None):
            conn.start_sse()
            conn.event(f"data: {{not json {TOKEN}\n\n")
            conn.end()

    with FaultServer(handler) as server:
        client = make_client(server.url)
        try:
            client.call_tool("echo", {})
        except mcpsync.McpError as exc:
            gate.exc(exc)
        finally:
            client.close()
    gate.check()
