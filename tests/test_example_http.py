"""The quickstart's HTTP example (examples/http_client.py) against a real server on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from test_http_sdk import SERVERS, _start, _stop

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "http_client.py"


@pytest.mark.timeout(60)
def test_http_example_lists_the_tools_of_a_real_server() -> None:
    proc, port = _start([sys.executable, str(SERVERS / "http_sdk.py"), "--transport", "streamable"])
    try:
        out = subprocess.run(
            [sys.executable, str(EXAMPLE), f"http://127.0.0.1:{port}/mcp", "not-checked-by-this-server"],
            capture_output=True, text=True, timeout=45,
        )
    finally:
        _stop(proc)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "'echo'" in out.stdout and "'add'" in out.stdout
