"""The benchmark suite's smoke mode runs, so bench/ never rots (no timing asserted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(150)
def test_bench_smoke_writes_a_full_table(tmp_path: Path) -> None:
    out = tmp_path / "smoke.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--no-sdk", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=140,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = out.read_text()
    # Every mcpsync cell of the stdio and HTTP tables holds a number.
    for row in (
        "sequential tools/call, calls/s",
        "8 threads, one client, calls/s",
        "8 threads, p99, µs",
        "8 threads, timeout=0.25 each, calls/s",
        "echo 0.0625 MiB, ms",
        "RSS holding N clients, MB",
        "threads per idle connection",
        "cold start (whole process), ms",
        "N servers as a ClientGroup: connect + tools/list, ms",
        "JSON reply, calls/s",
        "SSE reply, p50 µs",
        "legacy HTTP+SSE, calls/s",
        "8 threads, JSON reply, calls/s (floor: a Session per thread)",
    ):
        line = next(line for line in table.splitlines() if line.startswith(f"| {row} |"))
        cells = [cell.strip() for cell in line.strip("|").split("|")][1:]
        assert cells[-1] != "–" and re.fullmatch(r"[\d,.]+", cells[-1]), line
    assert "| stdio sequential / threaded floor |" in table
