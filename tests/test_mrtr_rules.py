"""Multi round-trip requests (SEP-2322): the client's rules, against a scripted HTTP server.

The rules the conformance suite's ``sep-2322-client-request-state`` scenario checks: the
``requestState`` is echoed byte for byte, each round is a new JSON-RPC request (new id), no
``requestState`` is sent when the server gave none, a result without ``resultType`` is
complete, and one call's input responses and state never leak into another call running at
the same time.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request
from test_http_modern import modern_server

import mcpsync
from mcpsync import types

pytestmark = pytest.mark.timeout(60)

#: Opaque to the client: JSON inside a string, with characters a careless client might re-encode.
STATE = json.dumps({"nonce": "n-1", "originalId": 1, "text": "é \"quoted\" \\ /"})
ASK = {"confirm": {"method": "elicitation/create", "params": {
    "message": "Please confirm", "requestedSchema": {"type": "object", "properties": {
        "confirmed": {"type": "boolean"}}}}}}


def result(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.body["id"], "result": body}


def text(value: str) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": value}]}


def mrtr_tools(request: Request, conn: Conn) -> bool:
    if request.rpc_method != "tools/call":
        return False
    params = request.body["params"]
    name, answered = params["name"], "inputResponses" in params
    if name == "echo_state":
        body = text("done") if answered else {"resultType": "input_required", "inputRequests": ASK,
                                               "requestState": STATE}
    elif name == "no_state":
        body = text("done") if answered else {"resultType": "input_required", "inputRequests": ASK}
    elif name == "two_rounds":
        state = params.get("requestState")
        if state is None:
            body = {"resultType": "input_required", "inputRequests": ASK, "requestState": "round-1"}
        elif state == "round-1":
            body = {"resultType": "input_required", "inputRequests": ASK, "requestState": "round-2"}
        else:
            body = text(f"finished after {state}")
    elif name == "no_result_type":
        body = {"content": [{"type": "text", "text": "complete by default"}]}
    else:
        body = text("plain")
    conn.respond(200, result(request, body))
    return True


def confirm(params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"confirmed": True})


def calls(server: FaultServer, name: str) -> list[dict[str, Any]]:
    return [r.body for r in server.rpc("tools/call") if r.body["params"]["name"] == name]


def connect(server: FaultServer, handler: Any = confirm) -> mcpsync.Client:
    return mcpsync.Client.http(server.url, timeout=10, transport="streamable-http", elicitation_handler=handler)


def test_request_state_is_echoed_exactly_with_a_new_id() -> None:
    with FaultServer(modern_server(mrtr_tools)) as server, connect(server) as client:
        assert client.call_tool("echo_state", {"a": 1}).content[0].text == "done"
        first, retry = calls(server, "echo_state")
    assert retry["id"] != first["id"]
    assert retry["params"]["requestState"] == STATE
    assert retry["params"]["inputResponses"] == {"confirm": {"action": "accept", "content": {"confirmed": True}}}
    assert retry["params"]["arguments"] == {"a": 1}  # the original params, unchanged
    assert "requestState" not in first["params"] and "inputResponses" not in first["params"]


def test_no_state_given_means_no_state_sent() -> None:
    with FaultServer(modern_server(mrtr_tools)) as server, connect(server) as client:
        client.call_tool("no_state", {})
        first, retry = calls(server, "no_state")
    assert "requestState" not in retry["params"]
    assert "confirm" in retry["params"]["inputResponses"]


def test_each_round_echoes_only_the_latest_state() -> None:
    with FaultServer(modern_server(mrtr_tools)) as server, connect(server) as client:
        assert client.call_tool("two_rounds", {}).content[0].text == "finished after round-2"
        rounds = calls(server, "two_rounds")
    assert [r["params"].get("requestState") for r in rounds] == [None, "round-1", "round-2"]
    assert len({r["id"] for r in rounds}) == 3


def test_missing_result_type_is_complete() -> None:
    with FaultServer(modern_server(mrtr_tools)) as server, connect(server) as client:
        assert client.call_tool("no_result_type", {}).content[0].text == "complete by default"
        assert len(calls(server, "no_result_type")) == 1  # no retry


def test_parallel_calls_do_not_share_input_responses_or_state() -> None:
    """While one call waits in its elicitation handler, another call goes out clean."""
    in_handler, other_done = threading.Event(), threading.Event()

    def slow_confirm(params: Any) -> types.ElicitResult:
        in_handler.set()
        assert other_done.wait(10)
        return confirm(params)

    outcome: list[Any] = []
    with FaultServer(modern_server(mrtr_tools)) as server, connect(server, slow_confirm) as client:
        worker = threading.Thread(target=lambda: outcome.append(client.call_tool("echo_state", {})))
        worker.start()
        try:
            assert in_handler.wait(10)
            assert client.call_tool("plain", {}).content[0].text == "plain"
        finally:
            other_done.set()
            worker.join(10)
        (plain,) = calls(server, "plain")
        _, retry = calls(server, "echo_state")
    assert "inputResponses" not in plain["params"] and "requestState" not in plain["params"]
    assert retry["params"]["requestState"] == STATE
    assert outcome and outcome[0].content[0].text == "done"


def test_a_request_the_client_cannot_answer_is_a_clear_error_and_no_retry() -> None:
    with FaultServer(modern_server(mrtr_tools)) as server, \
            mcpsync.Client.http(server.url, timeout=10, transport="streamable-http") as client:
        with pytest.raises(mcpsync.ProtocolError, match="elicitation/create"):
            client.call_tool("echo_state", {})
        assert len(calls(server, "echo_state")) == 1
