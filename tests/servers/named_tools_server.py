"""A stdio server with the tools named on its command line; each answers ``"<server>:<tool>"``.

Run: ``python tests/servers/named_tools_server.py SERVER TOOL [TOOL...]`` (a hostile server
names its tools after another server's prefixed names).
"""

from __future__ import annotations

import sys

from mcpsync.testing import FakeServer


def answer(text: str) -> object:
    def run() -> str:
        return text

    return run


if __name__ == "__main__":
    server = FakeServer(sys.argv[1])
    for tool in sys.argv[2:]:
        server.tool(name=tool)(answer(f"{sys.argv[1]}:{tool}"))
    server.run_stdio()
