"""Reading the tool calls out of a provider's response, and running them through MCP.

Responses are read duck-typed, as the SDKs' objects or as their dicts
(``model_dump()``), so neither SDK is imported here.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from concurrent.futures import Future, wait
from functools import partial
from typing import Any

import attrs

from mcpsync import types
from mcpsync.client.options import DEFAULT
from mcpsync.group.threads import spawn
from mcpsync.rpc.deadline import Deadline
from mcpsync.exceptions import McpError, RequestTimeout, excerpt
from mcpsync.group.errors import UnknownName
from mcpsync.llm.errors import ProviderResponseError
from mcpsync.llm._names import ANTHROPIC_LIMIT, OPENAI_LIMIT, NameMap, known_map, name_map
from mcpsync.llm._results import Outcome, anthropic_results, chat_results, outcome, responses_results
from mcpsync.llm._schema import for_model

log = logging.getLogger(__name__)

#: provider -> (name limit, formatter of the results)
FORMATS: dict[str, tuple[int, Callable[[list[Outcome]], list[dict[str, Any]]]]] = {
    "chat": (OPENAI_LIMIT, chat_results), "responses": (OPENAI_LIMIT, responses_results),
    "anthropic": (ANTHROPIC_LIMIT, anthropic_results)}


def field(obj: Any, key: str) -> Any:
    """``obj[key]`` for a dict, ``obj.key`` for an SDK object; ``None`` when absent."""
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


@attrs.frozen
class ToolCall:
    """One tool call the model asked for; *arguments* as the provider sent them."""

    id: str
    name: str
    arguments: Any


def parse_calls(response: Any) -> tuple[str, list[ToolCall]]:
    """The provider format (``"chat"``, ``"responses"``, ``"anthropic"``) and its tool calls.

    :raises ProviderResponseError: not a response of a known provider, or a
        tool call without an id or a name.
    """
    choices = field(response, "choices")
    if choices is not None:
        if not isinstance(choices, list) or not choices:
            raise ProviderResponseError("a chat completion's 'choices' must be a non-empty list")
        message = field(choices[0], "message")
        if message is None:
            raise ProviderResponseError("the chat completion's first choice has no 'message'")
        return "chat", _chat_calls(message)
    if field(response, "object") == "response" or isinstance(field(response, "output"), list):
        output = field(response, "output")
        if not isinstance(output, list):
            raise ProviderResponseError("a Responses result's 'output' must be a list")
        return "responses", [_call(field(i, "call_id"), field(i, "name"), field(i, "arguments"))
                             for i in output if field(i, "type") == "function_call"]
    role, content = field(response, "role"), field(response, "content")
    anthropic = field(response, "type") == "message"
    if not anthropic and ("tool_calls" in _keys(response) or (role == "assistant" and not isinstance(content, list))):
        return "chat", _chat_calls(response)  # the message itself: response.choices[0].message
    if anthropic or role == "assistant":
        if not isinstance(content, list):
            raise ProviderResponseError("an Anthropic message's 'content' must be a list")
        return "anthropic", [_call(field(b, "id"), field(b, "name"), field(b, "input"))
                             for b in content if field(b, "type") == "tool_use"]
    raise ProviderResponseError(
        "not an OpenAI chat completion or Responses result, nor an Anthropic message:"
        f" {excerpt(type(response).__name__, 80)}"
    )


def _keys(obj: Any) -> set[str]:
    return set(obj) if isinstance(obj, dict) else set(vars(obj)) if hasattr(obj, "__dict__") else set()


def _chat_calls(message: Any) -> list[ToolCall]:
    tool_calls = field(message, "tool_calls") or []
    if not isinstance(tool_calls, list):
        raise ProviderResponseError("a chat message's 'tool_calls' must be a list")
    calls = []
    for call in tool_calls:
        function = field(call, "function")
        if field(call, "type") not in (None, "function") or function is None:
            # A custom tool, not one of ours: the ":" keeps it from matching any
            # provider name, so it is answered as an unknown tool.
            name = f"{field(call, 'type')}:{field(field(call, 'custom'), 'name')}"
            calls.append(_call(field(call, "id"), name, None))
            continue
        calls.append(_call(field(call, "id"), field(function, "name"), field(function, "arguments")))
    return calls


def _call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    if not isinstance(call_id, str) or not call_id:
        raise ProviderResponseError(f"a tool call has no id (got {excerpt(call_id, 40)})")
    if not isinstance(name, str):
        raise ProviderResponseError(f"tool call {excerpt(call_id, 60)} has no name")
    return ToolCall(call_id, name, arguments)


def _arguments(call: ToolCall) -> dict[str, Any] | str:
    """The arguments as a dict, or the message telling the model what was wrong."""
    arguments = call.arguments
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            return f"the arguments of {call.name} are not valid JSON ({exc}); send a JSON object"
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        return f"the arguments of {call.name} must be a JSON object, not {type(arguments).__name__}"
    return arguments


def run_calls(source: Any, provider: str, calls: list[ToolCall], timeout: float | None) -> list[dict[str, Any]]:
    """Run *calls* concurrently through *source*; the provider's messages for their results."""
    limit, render = FORMATS[provider]
    if not calls:
        return []
    deadline = None if timeout is None else Deadline(timeout)
    mapping = known_map(source, limit)
    if mapping is None or any(c.name not in mapping.to_mcp for c in calls):
        # Not listed yet (or the tools changed): list once, for the names.
        try:
            # A tool hidden from the model (MCP Apps) gets no name: a call to it is never sent.
            tools = for_model(source.list_tools(timeout=deadline or DEFAULT))
            mapping = name_map(source, [t.name for t in tools], limit)
        except McpError as exc:
            # The calls will say what is wrong, as results the model reads.
            log.warning("could not list the tools to map the model's tool names: %s", exc)
            mapping = mapping or NameMap([c.name for c in calls], limit)
    futures: dict[int, Future[types.CallToolResult]] = {}
    outcomes: dict[int, Outcome] = {}
    for n, call in enumerate(calls):
        arguments = _arguments(call)
        name = mapping.to_mcp.get(call.name)
        if name is None:
            outcomes[n] = Outcome.error(call.id, call.name, f"there is no tool named {call.name!r}")
        elif isinstance(arguments, str):
            outcomes[n] = Outcome.error(call.id, call.name, arguments)
        else:
            futures[n] = spawn(f"llm-call-{n}", partial(source.call_tool, name, arguments, timeout=deadline or DEFAULT))
    wait(futures.values(), timeout=None if deadline is None else deadline.remaining())
    for n, future in futures.items():
        outcomes[n] = _settled(calls[n], future, timeout)
    return render([outcomes[n] for n in range(len(calls))])


def _settled(call: ToolCall, future: Future[types.CallToolResult], timeout: float | None) -> Outcome:
    if not future.done():
        return Outcome.error(call.id, call.name, f"the tool did not finish within {timeout} s")
    exc = future.exception()
    if exc is None:
        return outcome(call.id, call.name, future.result())
    if isinstance(exc, UnknownName):
        return Outcome.error(call.id, call.name, f"there is no tool named {call.name!r}")
    if isinstance(exc, RequestTimeout):
        return Outcome.error(call.id, call.name, "the tool did not finish in time")
    if isinstance(exc, McpError):
        return Outcome.error(call.id, call.name, f"the tool call failed: {type(exc).__name__}: {exc}")
    raise exc  # a bug (ours or a callback's) must not pass for a tool error
