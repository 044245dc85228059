"""The static data of ``sdk_server.py``: tools, resources, templates, prompts, completions.

Kept apart from the server so the tests can import the expected values (``import sdk_catalog``
with ``tests/servers`` on ``sys.path``) instead of repeating them.
"""

from __future__ import annotations

from typing import Any

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

_OBJECT: dict[str, Any] = {"type": "object"}


def _tool(
    name: str,
    description: str,
    properties: dict[str, Any] | None = None,
    required: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = required
    return {"name": name, "description": description, "inputSchema": schema, **extra}


TOOLS: list[dict[str, Any]] = [
    _tool(
        "echo",
        "Echo the text back",
        {"text": {"type": "string"}},
        ["text"],
        annotations={"readOnlyHint": True},
    ),
    _tool(
        "add",
        "Add two integers; structured output",
        {"a": {"type": "integer"}, "b": {"type": "integer"}},
        ["a", "b"],
        title="Adder",
        outputSchema={"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]},
    ),
    _tool("fail", "Return a tool error (isError)", {"message": {"type": "string"}}),
    _tool("media", "Return image, audio, resource link and embedded resources"),
    _tool(
        "slow", "Report progress while working", {"steps": {"type": "integer"}, "delay": {"type": "number"}}
    ),
    _tool("log", "Send log messages at the given levels", {"levels": {"type": "array"}}),
    _tool(
        "sample",
        "Ask the client's LLM (sampling/createMessage)",
        {"prompt": {"type": "string"}, "with_tools": {"type": "boolean"}},
    ),
    _tool("elicit_form", "Ask the user through a form", {"message": {"type": "string"}}),
    _tool("elicit_url", "Send the user to a URL", {"url": {"type": "string"}}),
    _tool("list_roots", "List the client's roots"),
    _tool("stats", "What the server saw: client info, capabilities, counters"),
    _tool("add_tool", "Register a tool and send tools/list_changed", {"name": {"type": "string"}}, ["name"]),
    _tool("touch", "Send resources/updated for a subscribed URI", {"uri": {"type": "string"}}, ["uri"]),
]

NOTES = {str(i): f"note {i}" for i in range(1, 8)}

RESOURCES: list[dict[str, Any]] = [
    {"uri": f"memo://note/{key}", "name": f"note-{key}", "mimeType": "text/plain"} for key in NOTES
] + [{"uri": "memo://blob/1", "name": "blob-1", "mimeType": "application/octet-stream"}]

TEMPLATES: list[dict[str, Any]] = [
    {"uriTemplate": "memo://note/{id}", "name": "note", "mimeType": "text/plain"},
    {"uriTemplate": "memo://greeting/{name}", "name": "greeting", "mimeType": "text/plain"},
    {"uriTemplate": "memo://upper/{text}", "name": "upper", "mimeType": "text/plain"},
    {"uriTemplate": "memo://lower/{text}", "name": "lower", "mimeType": "text/plain"},
]

PROMPTS: list[dict[str, Any]] = [
    {
        "name": "greet",
        "description": "Greet someone",
        "arguments": [{"name": "name", "required": True}, {"name": "style", "required": False}],
    },
    {"name": "plain", "description": "A prompt without arguments"},
    {"name": "multi", "description": "A prompt with several messages"},
    {"name": "extra-1", "description": "Filler for pagination"},
    {"name": "extra-2", "description": "Filler for pagination"},
]

STYLES = ["formal", "friendly", "funny"]
NAMES = ["alice", "alfred", "bob", "carol"]


def paginate(
    items: list[dict[str, Any]], cursor: str | None, size: int
) -> tuple[list[dict[str, Any]], str | None]:
    """Return one page and the cursor of the next one (``None`` on the last page)."""
    start = 0
    if cursor is not None:
        if not cursor.startswith("offset-"):
            raise ValueError(cursor)
        start = int(cursor.removeprefix("offset-"))
    end = start + size
    return items[start:end], (f"offset-{end}" if end < len(items) else None)


def read_uri(uri: str) -> list[dict[str, Any]] | None:
    """The ``contents`` of ``resources/read`` for ``uri``, or ``None`` when it does not exist."""
    scheme, _, rest = uri.partition("://")
    kind, _, key = rest.partition("/")
    if scheme != "memo":
        return None
    if kind == "note" and key in NOTES:
        return [{"uri": uri, "mimeType": "text/plain", "text": NOTES[key]}]
    if kind == "blob" and key == "1":
        return [{"uri": uri, "mimeType": "application/octet-stream", "blob": "AAECAw=="}]
    if kind == "greeting" and key:
        return [{"uri": uri, "mimeType": "text/plain", "text": f"Hello, {key}!"}]
    if kind in ("upper", "lower") and key:
        return [
            {"uri": uri, "mimeType": "text/plain", "text": key.upper() if kind == "upper" else key.lower()}
        ]
    return None


def prompt_messages(name: str, arguments: dict[str, str]) -> dict[str, Any]:
    """The ``prompts/get`` result; raises ``KeyError``/``ValueError`` for bad input."""
    if name == "greet":
        if "name" not in arguments:
            raise ValueError("missing required argument 'name'")
        style = arguments.get("style", "friendly")
        text = f"Please greet {arguments['name']} in a {style} way."
        return {
            "description": "Greet someone",
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        }
    if name == "plain":
        return {"messages": [{"role": "user", "content": {"type": "text", "text": "plain prompt"}}]}
    if name == "multi":
        return {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "question"}},
                {"role": "assistant", "content": {"type": "text", "text": "answer"}},
                {
                    "role": "user",
                    "content": {"type": "resource", "resource": {"uri": "memo://note/1", "text": "note 1"}},
                },
            ]
        }
    if name.startswith("extra-"):
        return {"messages": [{"role": "user", "content": {"type": "text", "text": name}}]}
    raise KeyError(f"unknown prompt {name!r}")


def complete_values(ref: dict[str, Any], argument: str, value: str, context: dict[str, str]) -> list[str]:
    """Completion candidates; with a ``name`` in the context, greet styles are personalised."""
    if ref.get("type") == "ref/prompt" and ref.get("name") == "greet" and argument == "style":
        values = [style for style in STYLES if style.startswith(value)]
        if "name" in context:
            values = [f"{style}-for-{context['name']}" for style in values]
        return values
    if (
        ref.get("type") == "ref/resource"
        and ref.get("uri") == "memo://greeting/{name}"
        and argument == "name"
    ):
        return [name for name in NAMES if name.startswith(value)]
    return []
