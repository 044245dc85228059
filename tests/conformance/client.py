"""mcpsync as a client under the official MCP conformance suite.

Run as ``python tests/conformance/client.py URL`` (the suite appends the URL as the last
argument and names the scenario in ``MCP_CONFORMANCE_SCENARIO``).  Exit status 0 = the
client did what the scenario asks without an error.  ``auth/*`` scenarios are handed to
``auth_client.run`` (mcpsync's OAuth, with ``MCP_CONFORMANCE_CONTEXT`` when given).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import mcpsync
from mcpsync import types


def accept_with_defaults(params: Any) -> types.ElicitResult:
    """Accept a form elicitation, filling every field that has a schema default."""
    schema = getattr(params, "requested_schema", None) or {}
    if not isinstance(schema, dict):
        schema = getattr(schema, "__dict__", {})
    props = schema.get("properties") or {}
    content = {name: spec["default"] for name, spec in props.items() if isinstance(spec, dict) and "default" in spec}
    return types.ElicitResult(action="accept", content=content)


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if scenario.startswith("auth/"):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import auth_client

        raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
        return auth_client.run(scenario, url, json.loads(raw) if raw else None)
    options: dict[str, Any] = {"timeout": 20, "client_info": ("mcpsync-conformance", "0.1")}
    if scenario.startswith("elicitation"):
        options["elicitation_handler"] = accept_with_defaults
    with mcpsync.Client.http(url, transport="streamable-http", **options) as client:
        tools = client.list_tools() if client.server_capabilities.tools is not None else []
        if scenario == "initialize":
            return 0
        for tool in tools:
            properties = (tool.input_schema or {}).get("properties") or {}
            arguments = {name: 1 for name in properties}  # the suite's tools take numbers or nothing
            client.call_tool(tool.name, arguments)
    return 0


if __name__ == "__main__":
    sys.exit(main())
