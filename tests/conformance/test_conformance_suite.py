"""Runs EVERY client scenario of the official MCP conformance suite against tests/conformance/client.py.

The runner (``../shared/tools/conformance/run_client_suite.sh``, beside the repository in CI)
prints a table ending with ``N passed, M failed``; scenarios listed in its
``expected-failures.txt`` (bugs of the suite itself) print ``XFAIL`` and count as failed in that
line, but do not make its exit status non-zero.  So: exit status 0, and failures = expected
failures exactly (an expected failure that passes is ``XPASS`` and fails the run: a stale entry).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contrib_support import require

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO.parent / "shared" / "tools" / "conformance"
SUITE = TOOLS / "run_client_suite.sh"
EXPECTED = TOOLS / "expected-failures.txt"


def _expected_failures() -> set[str]:
    if not EXPECTED.exists():
        return set()
    lines = (line.split("#", 1)[0].strip() for line in EXPECTED.read_text().splitlines())
    return {line for line in lines if line}


@pytest.mark.node
@pytest.mark.timeout(900)  # the first run installs Node 22 and the suite into a cache directory
def test_conformance_every_client_scenario(tmp_path: Path) -> None:
    require(None if SUITE.exists() else f"conformance runner not found at {SUITE}")
    argv = [str(SUITE), "-q", "-o", str(tmp_path)]
    if EXPECTED.exists():
        argv += ["-e", str(EXPECTED)]
    argv.append(f"exec {sys.executable} tests/conformance/client.py")
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=840, check=False)
    tail = proc.stdout[-6000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    summary = re.search(r"^(\d+) passed, (\d+) failed$", proc.stdout, re.MULTILINE)
    assert summary is not None, tail
    passed, failed = int(summary.group(1)), int(summary.group(2))
    xfails = set(re.findall(r"^(\S+)\s+XFAIL\b", proc.stdout, re.MULTILINE))
    assert xfails <= _expected_failures(), tail
    assert failed == len(xfails), tail  # 0 unexpected failures
    assert passed >= 20, tail  # every scenario ran, not a filtered subset
