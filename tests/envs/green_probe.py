"""mcpsync under gevent or eventlet monkey-patching, checked from inside the patched process.

Run by ``tests/test_env_green.py`` as a subprocess (monkey-patching must never happen in the
pytest process)::

    python tests/envs/green_probe.py gevent|eventlet stdio|http://127.0.0.1:PORT/mcp

It patches first, then talks to the official-SDK test server (``tests/servers/sdk_server.py``
started over stdio, or the HTTP URL given) and prints one line ``RESULT {json}`` with what it
measured; the test judges it:

* ``max_gap``: the longest time a ticking greenlet (it sleeps 5 ms in a loop) was kept from
  running while everything below ran, i.e. how long the hub was blocked at most, and
  ``gap_phase``, which of the steps below was running then;
  ``calibration``: the gap it saw when the hub was blocked on purpose (an unpatched 0.3 s
  sleep), which shows that the ticker sees a blocked hub;
* ``overlap``: the (start, end) of 4 concurrent 1 s calls made from 4 green threads;
* ``timeout``: the exception and elapsed time of a 5 s call made with ``timeout=0.5``;
* ``close``: how long ``close()`` took and how long after it a call blocked in a 10 s tool was
  released, with the exception it got;
* ``left``: ``mcpsync-*`` threads and child processes still alive afterwards (within 5 s);
  ``servers``: the child processes seen (the stdio servers), for the test to check they are gone.
"""

from __future__ import annotations

import sys

if sys.argv[1] == "gevent":
    from gevent import monkey

    monkey.patch_all()
    real_sleep = monkey.get_original("time", "sleep")
elif sys.argv[1] == "eventlet":
    import eventlet
    import eventlet.patcher

    eventlet.monkey_patch()
    real_sleep = eventlet.patcher.original("time").sleep
else:
    raise SystemExit(f"unknown patch {sys.argv[1]!r}")

import json  # noqa: E402 - after patching, as a patched application does it
import os  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import mcpsync  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers_proc import child_pids as children  # noqa: E402
from helpers_proc import mcpsync_threads  # noqa: E402

SDK_SERVER = Path(__file__).resolve().parent.parent / "servers" / "sdk_server.py"
TICK = 0.005
CALLS = 4


class Ticker:
    """A green thread that sleeps :data:`TICK` in a loop and records the longest gap."""

    def __init__(self) -> None:
        self.max_gap = 0.0
        self.phase = self.gap_phase = "start"  # what main() was doing; during the longest gap
        self.ticks = 0
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="probe-ticker", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop:
            time.sleep(TICK)
            now = time.monotonic()
            if now - last - TICK > self.max_gap:
                self.max_gap, self.gap_phase = now - last - TICK, self.phase
            self.ticks += 1
            last = now

    def stop(self) -> None:
        self._stop = True
        self._thread.join(5)


def client(target: str) -> mcpsync.Client:
    if target == "stdio":
        return mcpsync.Client.stdio([sys.executable, str(SDK_SERVER)], timeout=30)
    return mcpsync.Client.http(target, timeout=30)


def in_thread(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``fn`` in a (green) thread; the dict gets its start, end and result or exception."""
    out: dict[str, Any] = {}

    def run() -> None:
        out["start"] = time.monotonic()
        try:
            out["result"] = fn()
        except Exception as exc:  # noqa: BLE001 - reported to the test
            out["error"] = type(exc).__name__
        out["end"] = time.monotonic()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def slow(c: mcpsync.Client, delay: float, **kw: Any) -> str:
    return c.call_tool("slow", {"steps": 1, "delay": delay}, reset_timeout_on_progress=False, **kw).text


def main() -> None:
    target = sys.argv[2]
    report: dict[str, Any] = {"patched": sys.argv[1], "servers": []}
    # Warm up unmeasured: the first connect imports the rest of mcpsync (CPU work the hub
    # legitimately waits for); everything after this is I/O and must never block the hub.
    with client(target) as c:
        report["echo"] = c.call_tool("echo", {"text": "warm"}).text
        report["servers"] += sorted(children())
    ticker = Ticker()
    time.sleep(0.05)
    real_sleep(0.3)  # the hub blocked on purpose: the ticker must see it
    time.sleep(0.05)
    report["calibration"], ticker.max_gap = ticker.max_gap, 0.0
    with client(target) as c:
        ticker.phase = "connect"
        c.connect()
        report["servers"] += sorted(children())
        ticker.phase = "overlap"
        started = time.monotonic()
        calls = [in_thread(lambda: slow(c, 1.0)) for _ in range(CALLS)]
        for thread, _ in calls:
            thread.join(30)
        report["overlap"] = [[out["start"] - started, out["end"] - started, out.get("result", out.get("error"))]
                             for _, out in calls]
        ticker.phase = "timeout"
        started = time.monotonic()
        try:
            slow(c, 5.0, timeout=0.5)
            report["timeout"] = ["returned", time.monotonic() - started]
        except mcpsync.McpError as exc:
            report["timeout"] = [type(exc).__name__, time.monotonic() - started]
        report["after_timeout"] = c.call_tool("echo", {"text": "still here"}).text
        ticker.phase = "close"
        thread, out = in_thread(lambda: slow(c, 10.0))
        time.sleep(0.5)  # the call is waiting on the server
        closing = time.monotonic()
        c.close()
        report["close"] = {"took": time.monotonic() - closing}
        thread.join(10)
        report["close"].update(release=out.get("end", float("inf")) - closing, got=out.get("error", out.get("result")))
    ticker.stop()
    report["max_gap"], report["gap_phase"], report["ticks"] = ticker.max_gap, ticker.gap_phase, ticker.ticks
    deadline = time.monotonic() + 5
    while True:
        threads = sorted(mcpsync_threads())
        kids = sorted(children())
        if not (threads or kids) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    report["left"] = {"threads": threads, "children": kids}
    print("RESULT " + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
