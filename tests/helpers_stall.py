"""Whether the process stalled: another thread ticks every 10 ms while the block runs."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator


@contextlib.contextmanager
def ticker() -> Iterator[list[float]]:
    """Yield a list that holds, after the block, the gaps between the other thread's ticks.

    A gap as long as the block means nothing else ran (the GIL was held): this measures the
    stall, not the speed of the code in the block.
    """
    ticks = [time.monotonic()]
    gaps: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(0.01):
            ticks.append(time.monotonic())

    thread = threading.Thread(target=tick, name="ticker")
    thread.start()
    try:
        yield gaps
    finally:
        stop.set()
        thread.join()
        ticks.append(time.monotonic())
        gaps.extend(b - a for a, b in zip(ticks, ticks[1:]))
