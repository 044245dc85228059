"""Runs the official MCP conformance suite's non-auth client scenarios against tests/conformance/client.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO.parent / "shared" / "tools" / "conformance" / "run_client_suite.sh"
SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]


@pytest.mark.node
@pytest.mark.timeout(600)  # the first run installs Node 22 and the suite into a cache directory
def test_conformance_client_scenarios(tmp_path: Path) -> None:
    if not SUITE.exists():
        message = f"conformance runner not found at {SUITE}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    argv = [str(SUITE), "-o", str(tmp_path)]
    for scenario in SCENARIOS:
        argv += ["-s", scenario]
    argv.append(f"exec {sys.executable} tests/conformance/client.py")
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=540, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"{len(SCENARIOS)} passed, 0 failed" in proc.stdout, proc.stdout[-4000:]
