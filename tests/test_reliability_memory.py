"""Memory under notification floods (RELIABILITY E2, E3), against a real stdio server.

Policy under test (docs/reliability.rst): notifications wait for callbacks in one bounded queue
per connection (``max_queued_notifications``); when it is full the *newest* notification is
dropped and counted (``Dispatcher.dropped``), with a rate-limited WARNING. The reader thread
never blocks on a callback, and replies never wait behind notifications.

Memory is measured with :mod:`tracemalloc` (allocations made by Python code in this process,
reader thread included), so the bound does not depend on the allocator or the machine.
"""

from __future__ import annotations

import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

import mcpsync
from mcpsync import types

REL_SERVER = Path(__file__).resolve().parent / "servers" / "rel_server.py"
FLOOD = 100_000
SIZE = 1_000  # bytes of data per notification: 100 k of them would be > 100 MiB if all were kept
QUEUE = 1_000
MiB = 1 << 20


@pytest.mark.timeout(180)
def test_flood_with_a_blocked_callback_keeps_memory_bounded_and_counts_drops() -> None:
    release = threading.Event()
    seen: list[str] = []

    def blocked_handler(params: types.LoggingMessageNotificationParams) -> None:
        seen.append(str(params.level))
        release.wait(60)  # the first callback blocks: nobody consumes during the flood

    client = mcpsync.Client.stdio(
        [sys.executable, str(REL_SERVER)],
        mode="legacy",
        logging_handler=blocked_handler,
        max_queued_notifications=QUEUE,
    )
    try:
        client.connect()
        tracemalloc.start()
        try:
            baseline, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            # The reply comes after all 100 k notifications on the same pipe: it must not wait
            # for the blocked callback.
            assert client.call_tool("flood", {"count": FLOOD, "size": SIZE}, timeout=120).text == "flooded"
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        dropped = client._conn.notifications.dropped  # type: ignore[union-attr]
        print(f"\nflood: {FLOOD} notifications of {SIZE} B, queue {QUEUE}: peak +{(peak - baseline) / MiB:.1f} MiB, dropped {dropped}")
        # One notification is in the blocked callback, QUEUE wait in the queue, the rest dropped.
        assert dropped == FLOOD - QUEUE - 1
        assert peak - baseline < 16 * MiB
        release.set()
        client.ping()  # the connection is healthy
        assert client._conn.session.pending_count() == 0  # type: ignore[union-attr]
    finally:
        release.set()
        client.close()


@pytest.mark.timeout(120)
def test_cancellation_flood_for_unknown_requests_keeps_no_state() -> None:
    """A server that sends ``notifications/cancelled`` for ids it never sent must not grow memory."""
    client = mcpsync.Client.stdio([sys.executable, str(REL_SERVER)], mode="legacy")
    try:
        client.connect()
        assert client.call_tool("cancel_flood", {"count": 20_000}, timeout=60).text == "flooded"
        client.ping()
        conn = client._conn
        assert conn is not None
        assert len(conn._cancelled_requests) == 0
    finally:
        client.close()
