"""Stress (RELIABILITY E1, A5, A6, A9, A10): many threads, one stdio client, a mix of call kinds.

Every worker thread runs a seeded random mix against ``tests/servers/rel_server.py``:

* fast ``echo`` calls, whose reply must be exactly the caller's unique payload;
* ``slow`` calls (the server answers from its own thread after a few ms) with a random per-call
  timeout that is sometimes shorter than the delay: the caller gets its own payload or
  :class:`~mcpsync.RequestTimeout`, and a late reply is dropped;
* ``request_async(...)`` followed by ``cancel()`` at a random moment: when ``cancel()`` returns
  True the waiter gets :class:`~mcpsync.RequestCancelled`, otherwise the reply won and must be the
  caller's payload; half the cancelled slow calls are still answered by the server (late replies);
* ``ping`` and uncached ``tools/list``.

Afterwards: zero mismatched replies, zero pending requests, every call accounted for, and after
``close()`` no ``mcpsync-*`` thread, child process or file descriptor left over.

Scale: the normal suite runs 32 threads × 300 calls. ``MCPSYNC_STRESS=1`` (``tox -e stress``)
runs the full 128 threads × 1000 calls.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers_proc import assert_no_leaks, snapshot

import mcpsync

HEAVY = os.environ.get("MCPSYNC_STRESS") == "1"
THREADS, CALLS = (128, 1000) if HEAVY else (32, 300)
REL_SERVER = Path(__file__).resolve().parent / "servers" / "rel_server.py"


def rel_client(**options: object) -> mcpsync.Client:
    return mcpsync.Client.stdio([sys.executable, str(REL_SERVER)], mode="legacy", **options)  # type: ignore[arg-type]


def one_call(client: mcpsync.Client, rng: random.Random, payload: str, tally: Counter[str]) -> str | None:
    """Run one random call; return a description of a wrong outcome, or ``None``."""
    roll = rng.random()
    if roll < 0.55:
        got = client.call_tool("echo", {"text": payload}, timeout=60).text
        tally["fast"] += 1
        return None if got == payload else f"echo {payload!r} got {got[:80]!r}"
    if roll < 0.70:
        ms = rng.uniform(1, 30)
        text = payload + ("!late" if rng.random() < 0.5 else "")
        try:
            got = client.call_tool("slow", {"text": text, "ms": ms}, timeout=rng.uniform(0.002, 0.06)).text
        except mcpsync.RequestTimeout:
            tally["timeout"] += 1
            return None
        tally["slow"] += 1
        return None if got == text else f"slow {text!r} got {got[:80]!r}"
    if roll < 0.85:
        slow = rng.random() < 0.5
        text = payload + ("!late" if rng.random() < 0.5 else "")
        args = {"name": "slow", "arguments": {"text": text, "ms": rng.uniform(1, 20)}} if slow else {
            "name": "echo",
            "arguments": {"text": text},
        }
        call = client.request_async("tools/call", args)
        if rng.random() < 0.5:
            time.sleep(rng.uniform(0, 0.01))
        cancelled = call.cancel("stress")
        try:
            result = call.result(timeout=60)
        except mcpsync.RequestCancelled:
            tally["cancelled"] += 1
            return None if cancelled else f"cancel() returned False but {text!r} raised RequestCancelled"
        tally["cancel-lost"] += 1
        if cancelled:
            return f"cancel() returned True but {text!r} got a result"
        got = result["content"][0]["text"]
        return None if got == text else f"async {text!r} got {got[:80]!r}"
    if roll < 0.95:
        client.ping(timeout=60)
        tally["ping"] += 1
        return None
    names = [tool.name for tool in client.list_tools(timeout=60, cache=False)]
    tally["list"] += 1
    return None if names == ["echo", "slow", "flood", "cancel_flood", "raw", "pid"] else f"tools/list got {names}"


@pytest.mark.timeout(1500 if HEAVY else 180)
def test_threads_share_one_client_with_timeouts_and_cancellations() -> None:
    before = snapshot()
    client = rel_client()
    client.connect()
    failures: list[str] = []
    tallies = [Counter[str]() for _ in range(THREADS)]
    start = threading.Barrier(THREADS + 1)

    def worker(index: int) -> None:
        rng = random.Random(index)
        try:
            start.wait(timeout=60)
            for call in range(CALLS):
                wrong = one_call(client, rng, f"t{index}-c{call}", tallies[index])
                if wrong is not None:
                    failures.append(wrong)
                    return
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(f"thread {index}: {exc!r}")

    workers = [
        threading.Thread(target=worker, args=(i,), name=f"test-stress-{i}", daemon=True) for i in range(THREADS)
    ]
    for thread in workers:
        thread.start()
    began = time.monotonic()
    start.wait(timeout=60)
    for thread in workers:
        thread.join(timeout=1200 if HEAVY else 150)
    elapsed = time.monotonic() - began
    try:
        assert not any(t.is_alive() for t in workers), "a worker thread hung"
        assert failures == [], failures[:10]
        total: Counter[str] = sum(tallies, Counter())
        assert sum(total.values()) == THREADS * CALLS
        session = client._conn.session  # type: ignore[union-attr]
        assert session.pending_count() == 0
        # Every kind of outcome actually happened, so the test exercised what it claims to.
        for kind in ("fast", "slow", "timeout", "cancelled", "ping", "list"):
            assert total[kind] > 0, (kind, total)
        print(
            f"\nstress: {THREADS} threads x {CALLS} calls in {elapsed:.1f} s: {dict(total)};"
            f" late/unknown replies dropped: {session.dropped_responses}"
        )
    finally:
        client.close()
    assert_no_leaks(before)
