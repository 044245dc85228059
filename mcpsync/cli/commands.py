"""The subcommands of ``mcpsync`` that talk to a server.

Each ``cmd_<name>(args, out, err)`` returns the exit status; errors are
raised and turned into one line (and an exit code) by :func:`mcpsync.cli.main.main`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from mcpsync.cli.connect import UsageError, oauth_for, open_client, resolve
from mcpsync.cli.output import ProgressBar, dump_json, print_content, print_tools, wire
from mcpsync.config import load_config

__all__ = ["COMMANDS", "parse_arguments"]


def _json(args: argparse.Namespace) -> bool:
    return getattr(args, "output", None) == "json" or bool(getattr(args, "json_output", False))


def _coerce(raw: str, spec: Any) -> Any:
    """A ``key=value`` value, typed by the tool's schema: strings stay strings, the rest is JSON."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "string" or (isinstance(kind, list) and kind == ["string"]):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # not JSON: a string is the friendliest reading


def parse_arguments(
    pairs: list[str], schema: dict[str, Any] | None, *, strings: bool = False
) -> dict[str, Any]:
    """``["a=1", "name=Ada"]`` → ``{"a": 1, "name": "Ada"}``, guided by a JSON Schema.

    >>> parse_arguments(["a=2", "text=007", "tags=[1,2]"],
    ...                 {"properties": {"text": {"type": "string"}}})
    {'a': 2, 'text': '007', 'tags': [1, 2]}
    """
    props = (schema or {}).get("properties") or {}
    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"expected key=value, got {pair!r}")
        result[key] = value if strings else _coerce(value, props.get(key))
    return result


def _json_object(text: str) -> dict[str, Any]:
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--json ARGS is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--json ARGS must be a JSON object")
    return value


def cmd_tools(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_client(args) as client:
        tools = client.list_tools()
    if _json(args):
        dump_json(wire(tools), out)
    else:
        print_tools(tools, out)
    return 0


def cmd_call(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.json_args is not None and args.arguments:
        raise UsageError("give key=value arguments or --json ARGS, not both")
    bar = ProgressBar(err)
    with open_client(args) as client:
        if args.json_args is not None:
            arguments = _json_object(args.json_args)
        else:
            tool = next((t for t in client.list_tools() if t.name == args.tool), None)
            arguments = parse_arguments(args.arguments, tool.input_schema if tool else None)
        try:
            result = client.call_tool(args.tool, arguments, progress=bar)
        finally:
            bar.done()
    if _json(args):
        dump_json(wire(result), out)
    else:
        print_content(result.content, out)
        if result.structured_content is not None and not result.content:
            dump_json(result.structured_content, out)
    if result.is_error:
        print(f"error: tool {args.tool!r} reported an error", file=err)
        return 1
    return 0


def cmd_resources(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_client(args) as client:
        resources = client.list_resources()
        caps = client.server_capabilities
        templates = client.list_resource_templates() if caps.resources is not None else []
    if _json(args):
        dump_json({"resources": wire(resources), "resourceTemplates": wire(templates)}, out)
        return 0
    for res in resources:
        extra = ", ".join(x for x in (res.name, res.mime_type) if x)
        print(f"{res.uri}  ({extra})" if extra else res.uri, file=out)
    for tpl in templates:
        print(f"{tpl.uri_template}  (template: {tpl.name})", file=out)
    return 0


def cmd_read(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_client(args) as client:
        result = client.read_resource(args.uri)
    if _json(args):
        dump_json(wire(result), out)
    else:
        print_content(list(result.contents), out)
    return 0


def cmd_prompts(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_client(args) as client:
        prompts = client.list_prompts()
    if _json(args):
        dump_json(wire(prompts), out)
        return 0
    for prompt in prompts:
        params = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments or [])
        print(f"{prompt.name}({params})", file=out)
        if prompt.description:
            print(f"    {prompt.description.strip().splitlines()[0]}", file=out)
    return 0


def cmd_prompt(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    # Prompt arguments are always strings on the wire.
    arguments = parse_arguments(args.arguments, None, strings=True)
    with open_client(args) as client:
        result = client.get_prompt(args.name, arguments)
    if _json(args):
        dump_json(wire(result), out)
        return 0
    for message in result.messages:
        print(f"[{message.role}]", file=out)
        print_content([message.content], out)
    return 0


def cmd_servers(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import os

    path = getattr(args, "config", None) or os.environ.get("MCPSYNC_CONFIG")
    if not path:
        raise UsageError("servers lists a config file: give --config FILE (or set MCPSYNC_CONFIG)")
    servers = load_config(path, expand_variables=False)
    if _json(args):
        dump_json({name: {"transport": s.transport, "target": s.describe()}
                   for name, s in servers.items()}, out)
        return 0
    width = max((len(n) for n in servers), default=0)
    for name, server in servers.items():
        kind = "stdio" if server.transport == "stdio" else server.transport
        print(f"{name:<{width}}  {kind:<15}  {server.describe()}", file=out)
    return 0


def _remote_url(args: argparse.Namespace) -> str:
    entry = resolve(args)
    if entry.url is None or entry.transport == "websocket":
        raise UsageError("login and logout are for HTTP servers (--url, or a config entry with url)")
    return entry.url


def cmd_login(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url = _remote_url(args)
    auth = oauth_for(args, url, interactive=True)
    print(f"Logging in to {url}: a browser opens (or the URL is printed here)...", file=err)
    auth.login_now(url)
    print(f"Logged in to {url}; tokens saved in {auth.store!r}.", file=out)
    return 0


def cmd_logout(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url = _remote_url(args)
    auth = oauth_for(args, url, interactive=False)
    auth.logout()
    print(f"Logged out of {url}: tokens and registration removed.", file=out)
    return 0


COMMANDS = {
    "tools": cmd_tools,
    "call": cmd_call,
    "resources": cmd_resources,
    "read": cmd_read,
    "prompts": cmd_prompts,
    "prompt": cmd_prompt,
    "servers": cmd_servers,
    "login": cmd_login,
    "logout": cmd_logout,
}
