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
