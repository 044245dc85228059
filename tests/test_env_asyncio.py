"""The sync API called from inside a running asyncio loop (``asyncio.run(main())``), issue 25.

It works over stdio and HTTP (mcpsync runs no loop of its own, so there is no "loop already
running" error), and it does what any blocking call does there: the loop waits while the call
waits.  A ticking task shows both sides: a direct 0.5 s call stalls the loop for about 0.5 s;
``asyncio.to_thread`` (or ``loop.run_in_executor``) keeps the loop running and lets calls overlap.
docs/deployment.rst shows the pattern.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_http_sdk import _start, _stop

import mcpsync

SERVERS = Path(__file__).resolve().parent / "servers"

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(params=["stdio", "http"])
def make_client(request: pytest.FixtureRequest) -> Iterator[Callable[[], mcpsync.Client]]:
    if request.param == "stdio":
        yield lambda: mcpsync.Client.stdio([sys.executable, str(SERVERS / "sdk_server.py")], timeout=30)
        return
    proc, port = _start([sys.executable, str(SERVERS / "http_sdk.py"), "--transport", "streamable"])
    try:
        yield lambda: mcpsync.Client.http(f"http://127.0.0.1:{port}/mcp", timeout=30)
    finally:
        _stop(proc)


class Ticker:
    """A task that sleeps 5 ms in a loop and records the longest the loop kept it waiting."""

    def __init__(self) -> None:
        self.max_gap = 0.0
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            self.max_gap, last = max(self.max_gap, now - last - 0.005), now

    async def measure(self) -> float:
        """The longest gap since the last measure (after letting the ticker run once more)."""
        await asyncio.sleep(0.02)
        gap, self.max_gap = self.max_gap, 0.0
        return gap


def slow(client: mcpsync.Client, delay: float, **kw: object) -> str:
    return client.call_tool("slow", {"steps": 1, "delay": delay}, reset_timeout_on_progress=False, **kw).text


def timed(client: mcpsync.Client) -> tuple[float, float, str]:
    start = time.monotonic()
    text = slow(client, 1.0)
    return start, time.monotonic(), text


def test_sync_api_inside_a_running_loop(make_client: Callable[[], mcpsync.Client]) -> None:
    async def main() -> dict[str, object]:
        out: dict[str, object] = {}
        with make_client() as client:
            out["echo"] = client.call_tool("echo", {"text": "in a loop"}).text  # connects, too
            ticker = Ticker()
            await ticker.measure()
            out["direct"] = slow(client, 0.5)
            out["direct_gap"] = await ticker.measure()
            out["threaded"] = await asyncio.gather(*(asyncio.to_thread(timed, client) for _ in range(4)))
            out["threaded_gap"] = await ticker.measure()
            started = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                await asyncio.get_running_loop().run_in_executor(None, lambda: slow(client, 5.0, timeout=0.3))
            out["timeout_took"] = time.monotonic() - started
            out["timeout_gap"] = await ticker.measure()
            ticker.task.cancel()
        return out

    out = asyncio.run(main())
    assert out["echo"] == "in a loop" and out["direct"] == "done after 1 steps"
    assert out["direct_gap"] >= 0.45, out  # the direct call held the loop for its whole length
    runs = out["threaded"]
    assert isinstance(runs, list) and [r[2] for r in runs] == ["done after 1 steps"] * 4
    assert max(r[0] for r in runs) < min(r[1] for r in runs), runs  # all four at once
    assert out["threaded_gap"] < 0.25 and out["timeout_gap"] < 0.25, out  # the loop kept running
    assert 0.3 <= out["timeout_took"] < 2.0, out  # the 5 s call ended at its timeout
