"""A scripted model behind the real HTTP APIs of OpenAI and Anthropic, on 127.0.0.1.

The real ``openai`` and ``anthropic`` SDKs talk to it with ``base_url=``: it serves
``POST /v1/chat/completions``, ``POST /v1/responses`` and ``POST /v1/messages``. Like the
real APIs it is stateless: from the conversation it is sent, it counts the model turns so
far; while the script has turns left it asks for that turn's tool calls, then it answers
``"Final answer: "`` followed by the tool results it was sent last (or the last user text).

It checks what the providers check and answers 400 in their error format when a request
breaks a rule: tool names (OpenAI: 64, Anthropic: 128 characters of ``[a-zA-Z0-9_-]``),
object schemas, ``strict`` set on Responses tools, and every tool call answered by a
result with its id, in the place each API requires.

A script turn is a list of ``(name, arguments)``; *name* is matched against the offered
tools exactly or as the unique name ending with ``__name`` or ``name``; ``"!name"`` is
sent verbatim (a tool the model made up); *arguments* given as a ``str`` are sent as they
are (malformed JSON), as a dict they are JSON.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = list[tuple[str, Any]]
_NAME = {
    "openai": re.compile(r"[a-zA-Z0-9_-]{1,64}\Z"),
    "anthropic": re.compile(r"[a-zA-Z0-9_-]{1,128}\Z"),
}
MODEL = "scripted-model"


class Rejected(Exception):
    """The request breaks a rule of the API: answered with 400."""


class ScriptedLLM:
    """The server; a context manager. ``requests`` holds ``(path, body)`` of each request."""

    def __init__(self, turns: list[Turn] | None = None) -> None:
        self.turns = turns or []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.rejections: list[str] = []
        self._lock = threading.Lock()
        llm = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with llm._lock:
                    llm.requests.append((self.path, body))
                status, answer = llm.answer(self.path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="scripted-llm", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def bodies(self, suffix: str) -> Iterator[dict[str, Any]]:
        """The bodies of the requests whose path ends with *suffix*."""
        return (body for path, body in list(self.requests) if path.endswith(suffix))

    # -- the model ---------------------------------------------------------------

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        try:
            if path.endswith("/chat/completions"):
                return 200, self._chat(body)
            if path.endswith("/responses"):
                return 200, self._responses(body)
            if path.endswith("/messages"):
                return 200, self._anthropic(body)
        except Rejected as exc:
            with self._lock:
                self.rejections.append(str(exc))
            if path.endswith("/messages"):
                return 400, {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": str(exc)},
                }
            return 400, {
                "error": {
                    "message": str(exc),
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            }
        return 404, {"error": {"message": f"no route {path}"}}

    def _calls(self, turn_index: int, offered: list[str]) -> list[tuple[str, str]] | None:
        """The (name, JSON arguments) the script asks for at this turn; None: answer."""
        if turn_index >= len(self.turns):
            return None
        calls = []
        for name, arguments in self.turns[turn_index]:
            calls.append(
                (
                    _pick(name, offered),
                    arguments if isinstance(arguments, str) else json.dumps(arguments),
                )
            )
        return calls

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        offered = [_chat_tool(tool) for tool in body.get("tools") or []]
        messages = body.get("messages") or []
        pending: set[str] = set()
        for message in messages:
            role = message.get("role")
            if role == "tool":
                if message.get("tool_call_id") not in pending:
                    raise Rejected(
                        "a tool message must answer a tool call of the assistant message before it"
                    )
                pending.discard(message["tool_call_id"])
                if not isinstance(message.get("content"), str):
                    raise Rejected("tool message content must be a string here")
                continue
            if pending:
                raise Rejected(f"tool calls without a tool message: {sorted(pending)}")
            if role == "assistant":
                pending = {call["id"] for call in message.get("tool_calls") or []}
        if pending:
            raise Rejected(f"tool calls without a tool message: {sorted(pending)}")
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        calls = self._calls(turn, offered)
        if calls is None:
            tail = _after_last(messages, lambda m: m.get("role") == "assistant")
            results = [str(m["content"]) for m in tail if m.get("role") == "tool"]
            images = sum(1 for m in tail for p in _parts(m) if p.get("type") == "image_url")
            text = _final(results, images, _last_user_text(messages))
            message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
            reason = "stop"
        else:
            message = {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {
                        "id": f"call_{turn}_{n}",
                        "type": "function",
                        "function": {"name": name, "arguments": args},
                    }
                    for n, (name, args) in enumerate(calls)
                ],
            }
            reason = "tool_calls"
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", MODEL),
            "choices": [{"index": 0, "message": message, "finish_reason": reason, "logprobs": None}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def _responses(self, body: dict[str, Any]) -> dict[str, Any]:
        offered = []
        for tool in body.get("tools") or []:
            if tool.get("type") != "function" or not isinstance(tool.get("strict"), bool):
                raise Rejected("Responses function tools here must set 'strict' explicitly")
            offered.append(_check_tool("openai", tool.get("name"), tool.get("parameters")))
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items or [])
        open_calls: set[str] = set()
        turn = 0
        previous = None
        for item in items:
            kind = item.get("type")
            if kind == "function_call":
                open_calls.add(item["call_id"])
                turn += previous != "function_call"
            elif kind == "function_call_output":
                if item.get("call_id") not in open_calls:
                    raise Rejected(
                        f"No tool call found for function call output with call_id {item.get('call_id')}"
                    )
                open_calls.discard(item["call_id"])
            previous = kind
        if open_calls:
            raise Rejected(f"No tool output found for function call {sorted(open_calls)[0]}")
        calls = self._calls(turn, offered)
        if calls is None:
            tail = _after_last(items, lambda i: i.get("type") == "function_call")
            results, images = [], 0
            for item in tail:
                if item.get("type") == "function_call_output":
                    output = item.get("output")
                    if isinstance(output, str):
                        results.append(output)
                    else:
                        results += [p["text"] for p in output if p.get("type") == "input_text"]
                        images += sum(1 for p in output if p.get("type") == "input_image")
            text = _final(results, images, _last_user_text(items))
            output_items: list[dict[str, Any]] = [
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ]
        else:
            output_items = [
                {
                    "type": "function_call",
                    "id": f"fc_{turn}_{n}",
                    "call_id": f"call_{turn}_{n}",
                    "name": name,
                    "arguments": args,
                    "status": "completed",
                }
                for n, (name, args) in enumerate(calls)
            ]
        return {
            "id": f"resp_{len(self.requests)}",
            "object": "response",
            "created_at": 0,
            "model": body.get("model", MODEL),
            "status": "completed",
            "output": output_items,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": body.get("tools") or [],
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "temperature": 1.0,
            "top_p": 1.0,
        }

    def _anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        offered = [
            _check_tool("anthropic", t.get("name"), t.get("input_schema"))
            for t in body.get("tools") or []
        ]
        messages = body.get("messages") or []
        if not isinstance(body.get("max_tokens"), int):
            raise Rejected("max_tokens: Field required")
        expected: set[str] = set()
        for n, message in enumerate(messages):
            if message.get("role") != ("user" if n % 2 == 0 else "assistant"):
                raise Rejected(
                    "messages: roles must alternate between user and assistant, starting with user"
                )
            blocks = message["content"] if isinstance(message["content"], list) else []
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            if set(results) != expected:
                raise Rejected(
                    f"tool_use ids were found without tool_result blocks immediately after: {sorted(expected)}"
                )
            if results and blocks[0].get("type") != "tool_result":
                raise Rejected("tool_result blocks must come first in the user message")
            for block in blocks:
                if block.get("type") == "text" and not block.get("text"):
                    raise Rejected("text content blocks must be non-empty")
                for inner in block.get("content") or [] if block.get("type") == "tool_result" else []:
                    if inner.get("type") == "text" and not inner.get("text"):
                        raise Rejected("text content blocks must be non-empty")
            expected = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        if expected:
            raise Rejected("the last assistant message's tool_use blocks need tool_result blocks")
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        calls = self._calls(turn, offered)
        if calls is None:
            last = messages[-1]["content"] if messages else []
            results, images = [], 0
            for block in last if isinstance(last, list) else []:
                if block.get("type") == "tool_result":
                    inner = block.get("content") or []
                    text = "\n".join(b["text"] for b in inner if b.get("type") == "text")
                    images += sum(1 for b in inner if b.get("type") == "image")
                    results.append(f"Error: {text}" if block.get("is_error") else text)
            content: list[dict[str, Any]] = [
                {"type": "text", "text": _final(results, images, _last_user_text(messages))}
            ]
            reason = "end_turn"
        else:
            content = [
                {"type": "tool_use", "id": f"toolu_{turn}_{n}", "name": name, "input": _input(args)}
                for n, (name, args) in enumerate(calls)
            ]
            reason = "tool_use"
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", MODEL),
            "content": content,
            "stop_reason": reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }


def _check_tool(provider: str, name: Any, schema: Any) -> str:
    if not isinstance(name, str) or not _NAME[provider].match(name):
        raise Rejected(f"tools: name {name!r} does not match {_NAME[provider].pattern}")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise Rejected(f"tools.{name}: the input schema must have type 'object'")
    if "properties" in schema and not isinstance(schema["properties"], dict):
        raise Rejected(f"tools.{name}: properties must be an object")
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            raise Rejected(f"tools.{name}: {key} is not supported at the top level")
    return name


def _chat_tool(tool: dict[str, Any]) -> str:
    function = tool.get("function") or {}
    if tool.get("type") != "function":
        raise Rejected("tools: only function tools here")
    return _check_tool("openai", function.get("name"), function.get("parameters"))


def _pick(name: str, offered: list[str]) -> str:
    if name.startswith("!"):
        return name[1:]
    if name in offered:
        return name
    matches = [o for o in offered if o.endswith("__" + name)] or [o for o in offered if o.endswith(name)]
    if len(matches) != 1:
        raise Rejected(f"the script's tool {name!r} matches {matches} of the offered {offered}")
    return matches[0]


def _input(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments  # what a confused model might send: a string


def _after_last(items: list[dict[str, Any]], marker: Any) -> list[dict[str, Any]]:
    last = max((n for n, item in enumerate(items) if marker(item)), default=-1)
    return items[last + 1 :]


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            texts = [
                p.get("text", "") for p in _parts(message) if p.get("type") in ("text", "input_text")
            ]
            if texts:
                return " ".join(texts)
    return ""


def _final(results: list[str], images: int, question: str) -> str:
    said = " | ".join(results) if results else question
    return f"Final answer: {said}" + (f" (+{images} images)" if images else "")

