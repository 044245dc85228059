"""The demo server (both eras) over stdio, appending the method of each message it reads to a file.

Run: ``python tests/servers/method_log_server.py LOG``.  A test reads LOG to see what a
client sent first (``server/discover`` or ``initialize``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import IO

from mcpsync.demo import build_server
from mcpsync.testing.server.stdio import serve_stdio


def logged(lines: IO[bytes], log: IO[str]) -> Iterator[bytes]:
    for line in lines:
        try:
            log.write(f"{json.loads(line).get('method', '-')}\n")
        except (ValueError, AttributeError):
            log.write("?\n")
        log.flush()
        yield line


if __name__ == "__main__":
    server = build_server()
    with open(sys.argv[1], "a", encoding="utf-8") as log:
        serve_stdio(server._connect, logged(sys.stdin.buffer, log), sys.stdout.buffer)  # type: ignore[arg-type]
