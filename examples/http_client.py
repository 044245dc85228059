"""List a remote MCP server's tools over HTTP (the quickstart's network example).

Run as ``python examples/http_client.py URL [TOKEN]``.
"""

from __future__ import annotations

import sys

import mcpsync


def tool_names(url: str, token: str | None = None) -> list[str]:
    """The names of the tools the server at *url* offers."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    with mcpsync.Client.http(url, headers=headers, timeout=20) as client:
        return [tool.name for tool in client.list_tools()]


if __name__ == "__main__":
    print(tool_names(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
