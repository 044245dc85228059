"""Test-side helpers for the WebSocket tests: run ``ws_bridge.py``, make TLS certificates.

:class:`Bridge` starts the bridge as a subprocess and stops it within a bounded time; the
module-scoped fixtures of ``tests/test_websocket*.py`` use it.  :func:`make_certificates`
creates a throw-away CA and a server certificate for ``127.0.0.1`` with the ``openssl`` command.
"""

from __future__ import annotations

import selectors
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
BRIDGE = HERE / "ws_bridge.py"
START_TIMEOUT = 30.0


class Bridge:
    """The WebSocket bridge, listening on 127.0.0.1 on a free port."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(BRIDGE), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_TIMEOUT
        line = ""
        try:
            while not line.startswith("LISTENING"):
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise RuntimeError(f"ws_bridge did not start within {START_TIMEOUT} s")
                line = self.proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"ws_bridge exited with {self.proc.wait(5)}")
        except BaseException:
            self.stop()
            raise
        finally:
            selector.close()
        self.port = int(line.split()[1])

    def url(self, path: str = "/mcp", *, scheme: str = "ws", **query: object) -> str:
        """The URL of the bridge, with ``query`` choosing its faults (see ``ws_bridge.py``)."""
        text = urllib.parse.urlencode({k: str(v) for k, v in query.items()})
        return f"{scheme}://127.0.0.1:{self.port}{path}" + (f"?{text}" if text else "")

    def stop(self) -> None:
        """Close the bridge's stdin (it then stops its backends and exits); kill if it lingers."""
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def make_certificates(directory: Path) -> tuple[Path, Path, Path]:
    """Create ``ca.pem``, ``server.pem`` and ``server.key`` (valid for IP 127.0.0.1)."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    ca_key, ca, key, csr, cert = (
        directory / name for name in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem")
    )
    ext = directory / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca),
            "-days", "2", "-subj", "/CN=mcpsync test CA")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
            "-subj", "/CN=127.0.0.1")  # fmt: skip
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
            "-CAcreateserial", "-out", str(cert), "-days", "2", "-extfile", str(ext))  # fmt: skip
    return ca, cert, key
