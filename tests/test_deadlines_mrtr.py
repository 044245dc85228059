"""Deadlines across Multi Round-Trip rounds and a lazy connect (issue 12).

``max_total_timeout`` is one hard cap across every ``input_required`` round of a call (an
in-process scripted 2026-07-28 server, as in ``test_modern``); a lazy connect triggered by a
typed call happens inside that call's deadline (a real stdio server whose ``initialize`` is slow).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_modern import make_server  # noqa: F401 - the fixture

import mcpsync

SERVERS = Path(__file__).resolve().parent / "servers"

pytestmark = pytest.mark.timeout(60)


def test_a9_max_total_timeout_caps_all_mrtr_rounds_together(make_server: Any) -> None:  # noqa: F811
    never = threading.Event()

    def slow_round(message: dict[str, Any]) -> dict[str, Any]:
        never.wait(0.3)  # each round takes the server 0.3 s
        return {"resultType": "input_required", "requestState": "again"}

    server = make_server({"tools/call": slow_round})
    with server.client() as client:
        start = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            client.call_tool("t", timeout=5, max_total_timeout=1.0)
        # One cap for the whole call: not 1 s per round (10 rounds of 0.3 s would be 3 s).
        assert time.monotonic() - start < 2.0


def test_a10_lazy_connect_of_a_typed_call_is_inside_its_deadline() -> None:
    client = mcpsync.Client.stdio([sys.executable, str(SERVERS / "deadline_server.py"), "slow-initialize", "5"],
                                  timeout=30)
    start = time.monotonic()
    with pytest.raises(mcpsync.RequestTimeout):
        client.call_tool("echo", {}, timeout=0.5)
    assert time.monotonic() - start < 1.3  # not the client's 30 s, nor the server's shutdown
    client.close()


def test_timeout_alone_bounds_all_mrtr_rounds_together(make_server: Any) -> None:  # noqa: F811
    never = threading.Event()

    def slow_round(message: dict[str, Any]) -> dict[str, Any]:
        never.wait(0.3)  # each round takes the server 0.3 s, well inside a 1 s timeout
        return {"resultType": "input_required", "requestState": "again"}

    server = make_server({"tools/call": slow_round})
    with server.client() as client:
        client.connect()
        start = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            client.call_tool("t", timeout=1.0)
        # The deadline is fixed when the call starts: not a fresh 1 s for every round.
        assert time.monotonic() - start < 2.0


ASK = {"resultType": "input_required", "requestState": "s", "inputRequests": {
    "who": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "name?",
        "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}}}}}


def test_an_input_handler_slower_than_the_deadline_ends_the_call_by_it(make_server: Any) -> None:  # noqa: F811
    release = threading.Event()

    def elicit(p: Any) -> mcpsync.types.ElicitResult:
        release.wait(10)
        return mcpsync.types.ElicitResult(action="accept", content={"n": "late"})

    server = make_server({"tools/call": lambda m: ASK})
    try:
        with server.client(elicitation_handler=elicit) as client:
            client.connect()
            start = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                client.call_tool("t", timeout=0.5)
            assert time.monotonic() - start < 1.5
    finally:
        release.set()


def test_close_releases_a_call_whose_input_handlers_are_still_queued(make_server: Any) -> None:  # noqa: F811
    # More calls than handler workers: some calls' handlers wait in the queue, which close()
    # drops; their callers must still get ClientClosed, not wait forever.
    release = threading.Event()

    def elicit(p: Any) -> mcpsync.types.ElicitResult:
        release.wait(10)
        return mcpsync.types.ElicitResult(action="accept", content={"n": "x"})

    server = make_server({"tools/call": lambda m: ASK})
    client = server.client(elicitation_handler=elicit)
    outcomes: list[BaseException | None] = []

    def call() -> None:
        try:
            client.call_tool("t", timeout=None)
            outcomes.append(None)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            outcomes.append(exc)

    try:
        client.connect()
        callers = [threading.Thread(target=call, name=f"mrtr-caller-{i}") for i in range(8)]
        for thread in callers:
            thread.start()
        assert len(server.wait_for("tools/call", 8, timeout=10)) == 8
        time.sleep(0.2)  # the replies' handlers are queued or running: nothing to wait on from outside
        closed_at = time.monotonic()
        client.close()
        for thread in callers:
            thread.join(5)
        assert not any(thread.is_alive() for thread in callers)
        assert time.monotonic() - closed_at < 3.0
        assert len(outcomes) == 8 and all(isinstance(exc, mcpsync.ClientClosed) for exc in outcomes), outcomes
    finally:
        release.set()
        client.close()


def test_ping_and_a_typed_call_spend_one_deadline_with_their_lazy_connect() -> None:
    slow = [sys.executable, str(SERVERS / "deadline_server.py"), "slow-initialize", "5"]
    for call in (lambda c: c.ping(timeout=0.5), lambda c: c.read_resource("x://y", timeout=0.5),
                 lambda c: c.list_tools(timeout=0.5)):
        client = mcpsync.Client.stdio(slow, timeout=30)
        try:
            start = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                call(client)
            assert time.monotonic() - start < 1.3
        finally:
            client.close()
