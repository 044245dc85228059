"""Process life (issue 25) inside one call: Ctrl-C cancels it on the server, and a stale list
is never cached.

* Ctrl-C (a real SIGINT to the main thread) while a call of the official SDK's server runs,
  in both eras: KeyboardInterrupt at once, ``notifications/cancelled`` reaches the server (its
  ``slow`` tool counts the cancellation), the pending entry is gone, the next call works.
* A ``notifications/tools/list_changed`` that overtakes the reply of an in-flight
  ``tools/list`` (2026-07-28, ``ttlMs`` set): the stale reply is not cached.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import mcpsync

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
    pytest.mark.timeout(60),
]

OVERTAKE = str(Path(__file__).resolve().parent / "servers" / "overtake_server.py")


def slow_counts(client: mcpsync.Client) -> dict[str, Any]:
    stats = client.call_tool("stats").structured_content
    assert isinstance(stats, dict)
    return dict(stats["slow"])


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_ctrl_c_during_a_call_cancels_it_on_the_server(sdk_server: list[str], mode: str) -> None:
    with mcpsync.Client.stdio(sdk_server, mode=mode, timeout=30) as client:
        session = client._conn.session  # type: ignore[union-attr]
        main = threading.main_thread().ident
        assert main is not None

        def ctrl_c_once_pending() -> None:
            deadline = time.monotonic() + 10
            while session.pending_count() == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)  # the tool is running on the server
            signal.pthread_kill(main, signal.SIGINT)

        interrupter = threading.Thread(target=ctrl_c_once_pending)
        interrupter.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                client.call_tool("slow", {"steps": 100, "delay": 0.1})  # 10 s unless cancelled
        finally:
            interrupter.join(10)
        assert session.pending_count() == 0  # dropped now, not when a late reply comes
        # The server stopped the tool (the cancellation is handled asynchronously there).
        deadline = time.monotonic() + 5
        while (counts := slow_counts(client))["cancelled"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert counts == {"done": 0, "cancelled": 1}
        assert client.call_tool("echo", {"text": "next"}).text == "next"


def test_a_list_changed_that_overtakes_an_in_flight_list_leaves_nothing_stale_cached() -> None:
    changed = threading.Event()
    with mcpsync.Client.stdio([sys.executable, OVERTAKE], mode="2026-07-28", timeout=20) as client:
        client.on("notifications/tools/list_changed", lambda params: changed.set())
        assert [tool.name for tool in client.list_tools()] == ["old"]  # computed before the change
        assert changed.wait(10)
        assert [tool.name for tool in client.list_tools()] == ["new"]
