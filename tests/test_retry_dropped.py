"""Requests safe to repeat are retried after a dropped connection (issue 23 item 3; docs/policies.rst).

A raw-socket server reads a POST and resets the connection without answering, the first time
it sees each kind of request (method and tool name).  What reached the server proves what was
retried: safe methods and hinted tool calls arrive twice and succeed; a tool call that is not
safe to repeat arrives once and fails with ``outcome_unknown``; the call's deadline bounds the
retries of a server that drops every attempt.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request, discover_result, init_result, legacy_probe_answer

import mcpsync
from mcpsync import RetryPolicy, types
from mcpsync.exceptions import ConnectionClosed, RequestTimeout

pytestmark = pytest.mark.timeout(60)

TOOLS = [
    {"name": "plain", "inputSchema": {"type": "object"}},
    {"name": "reader", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "setter", "inputSchema": {"type": "object"}, "annotations": {"idempotentHint": True}},
]
RESULTS: dict[str, Any] = {
    "tools/list": {"tools": TOOLS},
    "tools/call": {"content": [{"type": "text", "text": "done"}]},
    "resources/list": {"resources": [{"uri": "file:///a", "name": "a"}]},
    "resources/templates/list": {"resourceTemplates": []},
    "resources/read": {"contents": [{"uri": "file:///a", "text": "A"}]},
    "prompts/list": {"prompts": [{"name": "p"}]},
    "prompts/get": {"messages": []},
    "completion/complete": {"completion": {"values": ["x"]}},
    "ping": {},
}
CAPABILITIES = {"tools": {}, "resources": {}, "prompts": {}, "completions": {}}


def _kind(request: Request) -> str:
    params = request.body.get("params") or {}
    return f"{request.rpc_method} {params.get('name', '')}".strip()


class Dropper:
    """Resets the connection of the first POST of each kind; ``always`` kinds are dropped every time."""

    def __init__(self, era: str, always: frozenset[str] = frozenset()) -> None:
        self.era = era
        self.always = always
        self.lock = threading.Lock()
        self.seen: dict[str, int] = {}

    def __call__(self, request: Request, conn: Conn) -> None:
        if request.method != "POST" or "id" not in request.body:  # no GET stream; DELETE; notifications
            conn.respond({"GET": 405, "DELETE": 200}.get(request.method, 202), b"", ctype="text/plain")
            return
        method = request.rpc_method
        kind = _kind(request)
        with self.lock:
            self.seen[kind] = self.seen.get(kind, 0) + 1
            drop = kind in self.always or (self.seen[kind] == 1 and method != "initialize")
        if drop:
            conn.reset()
        elif method == "server/discover":
            if self.era == "modern":
                result = discover_result(request)
                result["result"]["capabilities"] = CAPABILITIES
                conn.respond(200, result)
            else:
                legacy_probe_answer(conn)
        elif method == "initialize":
            result = init_result(request)
            result["result"]["capabilities"] = CAPABILITIES
            conn.respond(200, result, headers={"Mcp-Session-Id": "s1"})
        else:
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": RESULTS[method]})


def _client(server: FaultServer, **kw: Any) -> mcpsync.Client:
    kw.setdefault("timeout", 10)
    return mcpsync.Client.http(server.url + "/mcp", transport="streamable-http", **kw)


SAFE_CALLS: dict[str, Callable[[mcpsync.Client], Any]] = {
    "tools/list": lambda c: c.list_tools(cache=False),
    "resources/list": lambda c: c.list_resources(cache=False),
    "resources/templates/list": lambda c: c.list_resource_templates(cache=False),
    "resources/read": lambda c: c.read_resource("file:///a"),
    "prompts/list": lambda c: c.list_prompts(cache=False),
    "prompts/get p": lambda c: c.get_prompt("p"),
    "completion/complete": lambda c: c.complete(types.PromptReference(name="p"), "a", "x"),
    "ping": lambda c: c.ping(),
    "tools/call reader": lambda c: c.call_tool("reader", {}),
    "tools/call setter": lambda c: c.call_tool("setter", {}),
    "tools/call plain": lambda c: c.call_tool("plain", {}, retry=True),  # the caller says it is safe
}


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_every_safe_request_is_retried_once_after_a_reset_and_succeeds(era: str) -> None:
    dropper = Dropper(era)
    with FaultServer(dropper) as server, _client(server) as c:
        c.connect()  # the 2026-07-28 probe (server/discover) is the first request dropped
        if era == "modern":
            assert c.protocol_version == "2026-07-28"
            assert dropper.seen["server/discover"] == 2
        for kind, call in SAFE_CALLS.items():
            assert call(c) is not None or kind == "ping", kind
        for kind in SAFE_CALLS:
            if kind == "ping" and era == "modern":
                kind = "server/discover"  # what ping is in 2026-07-28: dropped and retried at connect
            assert dropper.seen[kind] == 2 + (kind == "server/discover"), (kind, dropper.seen)


def test_a_tool_call_not_safe_to_repeat_is_not_retried() -> None:
    dropper = Dropper("legacy")
    with FaultServer(dropper) as server, _client(server) as c:
        c.list_tools()  # dropped once, retried: the hints are known
        with pytest.raises(ConnectionClosed) as info:
            c.call_tool("plain", {})
        assert info.value.outcome_unknown
        assert "reset" in str(info.value)
        assert dropper.seen["tools/call plain"] == 1
        with pytest.raises(ConnectionClosed):
            c.call_tool("reader", {}, retry=False)  # hinted, but the caller said no
        assert dropper.seen["tools/call reader"] == 1
        assert c.call_tool("plain", {}).text == "done"  # the connection itself is fine


def test_the_deadline_bounds_the_retries() -> None:
    dropper = Dropper("legacy", always=frozenset({"tools/list"}))
    policy = RetryPolicy(attempts=1000, backoff=0.02, max_backoff=0.05)
    with FaultServer(dropper) as server, _client(server, retry=policy) as c:
        c.connect()
        start = time.monotonic()
        # The last failure as it is, or the timeout when the deadline passed during a try.
        with pytest.raises((ConnectionClosed, RequestTimeout)):
            c.list_tools(timeout=1.5)
        elapsed = time.monotonic() - start
        tries = dropper.seen["tools/list"]
        assert 2 < tries < 1000, tries  # retried, and stopped by the deadline, not the policy
        assert elapsed < 1.5 + 1.0  # the deadline, plus slack for a loaded machine
