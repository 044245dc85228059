"""mcpsync as a client under the official MCP conformance suite.

Run as ``python tests/conformance/client.py URL`` (the suite appends the URL as the last
argument and names the scenario in ``MCP_CONFORMANCE_SCENARIO``).  Exit status 0 = the
client did what the scenario asks without an error.  ``auth/*`` scenarios are handed to
``auth_client.run`` (mcpsync's OAuth, with ``MCP_CONFORMANCE_CONTEXT`` when given).

A thin driver of the public API: it connects, declares the handlers a host would, and does
what the scenario's description asks of a user (call the tools, echo a schema, load a
skill).  Every rule the suite checks (versions, headers, MRTR, verification) is the
library's, never this file's.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcpsync
from mcpsync import types
from mcpsync.exceptions import SkillVerificationError

log = logging.getLogger("conformance")

#: A value of each JSON Schema type, for calling a tool whose arguments the scenario leaves open.
SAMPLES: dict[str, Any] = {"integer": 1, "number": 1, "boolean": True, "string": "x"}


def accept_with_defaults(params: Any) -> types.ElicitResult:
    """Accept a form elicitation, filling every field that has a schema default."""
    schema = getattr(params, "requested_schema", None) or {}
    if not isinstance(schema, dict):
        schema = getattr(schema, "__dict__", {})
    props = schema.get("properties") or {}
    content = {name: spec["default"] for name, spec in props.items() if isinstance(spec, dict) and "default" in spec}
    return types.ElicitResult(action="accept", content=content)


def sample_arguments(tool: types.Tool) -> dict[str, Any]:
    """Arguments of the right type for every property of *tool* (the suite's tools take any)."""
    properties = (tool.input_schema or {}).get("properties") or {}
    return {
        name: SAMPLES.get(spec.get("type") if isinstance(spec, dict) else None, 1)
        for name, spec in properties.items()
    }


def call_every_tool(client: mcpsync.Client, context: dict[str, Any]) -> None:
    """The default: list the tools, then call each once (or the calls the context names).

    A host calls what it has discovered, and the listing is where the client learns which
    arguments go into ``Mcp-Param-*`` headers.
    """
    tools = client.list_tools() if client.server_capabilities.tools is not None else []
    planned = context.get("toolCalls")
    if isinstance(planned, list):
        for call in planned:
            client.call_tool(call["name"], call.get("arguments") or {})
        return
    for tool in tools:
        client.call_tool(tool.name, sample_arguments(tool))


def list_tools_only(client: mcpsync.Client, context: dict[str, Any]) -> None:
    """json-schema-ref-no-deref: list (and so parse) a schema whose $ref names a URL; call nothing."""
    client.list_tools()


def echo_schema(client: mcpsync.Client, context: dict[str, Any]) -> None:
    """json-schema-2020-12-preservation: send the focal tool's inputSchema back as received."""
    tools = {tool.name: tool for tool in client.list_tools()}
    client.call_tool("json_schema_echo", {"schema": tools["json_schema_2020_12_tool"].input_schema})


def list_skills_only(client: mcpsync.Client, context: dict[str, Any]) -> None:
    """sep-2640-client-no-prefetch: discover skills, load none."""
    for skill in client.list_skills():
        log.info("skill %s: %s", skill.uri, skill.frontmatter.get("description"))


def load_every_skill(client: mcpsync.Client, context: dict[str, Any]) -> None:
    """sep-2640-client-verify-*: load each skill; a tampered one must be refused."""
    for skill in client.list_skills():
        try:
            loaded = client.load_skill(skill)
        except SkillVerificationError as exc:
            log.warning("refused skill %s: %s", skill.uri, exc)
            continue
        for resource in [] if loaded.skill.dynamic else loaded.skill.resources:
            if resource.uri != loaded.uri:
                client.read_skill_file(loaded, resource.uri)


STEPS: dict[str, Callable[[mcpsync.Client, dict[str, Any]], None]] = {
    "initialize": lambda client, context: None,
    "json-schema-2020-12-preservation": echo_schema,
    "json-schema-ref-no-deref": list_tools_only,
    "sep-2640-client-no-prefetch": list_skills_only,
    "sep-2640-client-verify-digest": load_every_skill,
    "sep-2640-client-verify-size": load_every_skill,
    "sep-2640-client-verify-frontmatter": load_every_skill,
}


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    context = json.loads(raw) if raw else {}
    if scenario.startswith("auth/"):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import auth_client

        return auth_client.run(scenario, url, context or None)
    # A host that can elicit says so; the MRTR and elicitation scenarios ask it to.
    options: dict[str, Any] = {
        "timeout": 20,
        "client_info": ("mcpsync-conformance", "0.1"),
        "elicitation_handler": accept_with_defaults,
    }
    with mcpsync.Client.http(url, transport="streamable-http", **options) as client:
        STEPS.get(scenario, call_every_tool)(client, context)
    return 0


if __name__ == "__main__":
    sys.exit(main())
