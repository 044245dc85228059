"""Ready ``sampling_handler``s: a server's ``sampling/createMessage`` answered by OpenAI or Anthropic.

::

    llm = openai.OpenAI()
    handler = openai_sampling_handler(llm, model="gpt-5-mini")
    client = mcpsync.Client.stdio(cmd, sampling_handler=handler)

The request's messages (text, images, and the 2025-11-25 tool use and tool
results), token limit, temperature, stop sequences, tools and tool choice go to
the provider; its answer comes back as a
:class:`~mcpsync.types.CreateMessageResult`.

The server writes that request, so the handlers put the user's limits on it
first: ``approve`` sees (and may replace or refuse) every request, ``maxTokens``
is clamped to ``max_tokens``, and the server's system prompt is dropped unless
``system_prompt`` says otherwise (it would speak to your model with your
application's authority).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Union

import attrs

from mcpsync import types
from mcpsync.exceptions import ServerError
from mcpsync.llm.errors import ProviderResponseError
from mcpsync.llm._calls import field
from mcpsync.llm._names import ANTHROPIC_LIMIT, OPENAI_LIMIT, NameMap
from mcpsync.llm._results import IMAGE_TYPES, Image, Outcome, anthropic_results, chat_results, outcome
from mcpsync.llm._schema import anthropic_tool, openai_tool

Handler = Callable[[types.CreateMessageRequestParams], types.CreateMessageResult]
#: ``approve(request)``: ``True`` to send it, a request to send instead, ``False`` to refuse.
Approve = Callable[[types.CreateMessageRequestParams], Union[bool, types.CreateMessageRequestParams]]
#: ``"drop"``, ``"keep"``, or ``fn(server_prompt) -> prompt or None``.
SystemPolicy = Union[str, Callable[[str], Union[str, None]]]
#: The default cap on the tokens a server may ask for.
MAX_TOKENS = 4096

_CHAT_STOP = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse", "function_call": "toolUse"}
_ANTHROPIC_STOP = {"end_turn": "endTurn", "max_tokens": "maxTokens", "stop_sequence": "stopSequence",
                   "tool_use": "toolUse"}
_ANTHROPIC_CHOICE = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}
Params = types.CreateMessageRequestParams
#: A provider: its name limit, the ``create`` arguments of a request, the result of an answer.
_Request = Callable[[Params, NameMap, str], dict[str, Any]]
_Answer = Callable[[Any, NameMap, str], types.CreateMessageResult]


def _handler(limit: int, create: Callable[..., Any], request: _Request, answer: _Answer, model: str,
             approve: Approve | None, max_tokens: int, system_prompt: SystemPolicy,
             create_options: dict[str, Any]) -> Handler:
    """A handler that puts the user's limits on a server's request, then asks the provider."""
    if not callable(system_prompt) and system_prompt not in ("drop", "keep"):
        raise ValueError(f"system_prompt must be 'drop', 'keep' or a callable, not {system_prompt!r}")
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")

    def handler(params: Params) -> types.CreateMessageResult:
        verdict = True if approve is None else approve(params)
        if isinstance(verdict, types.CreateMessageRequestParams):
            params = verdict
        elif verdict is not True:
            raise ServerError(-1, "User rejected sampling request")  # the spec's code and text
        system = params.system_prompt or None
        if system is not None and system_prompt != "keep":
            system = system_prompt(system) if callable(system_prompt) else None
        params = attrs.evolve(params, max_tokens=min(params.max_tokens, max_tokens), system_prompt=system or None)
        names = NameMap([t.name for t in params.tools or []], limit)
        return answer(create(**{**request(params, names, model), **create_options}), names, model)

    return handler


def _blocks(message: types.SamplingMessage) -> list[Any]:
    return list(message.content) if isinstance(message.content, list) else [message.content]


def _tool_result(block: types.ToolResultContent) -> Outcome:
    return outcome(block.tool_use_id, "", types.CallToolResult(block.content, block.structured_content, block.is_error))


def _placeholder(block: Any) -> str:
    kind, mime = getattr(block, "type", "unknown"), getattr(block, "mime_type", "?")
    return f"[{kind} content ({mime}), not supported here]"


def _options(params: Params, kwargs: dict[str, Any], stop: str) -> dict[str, Any]:
    """*kwargs* with the request's temperature and stop sequences (*stop*: the provider's name)."""
    if params.temperature is not None:
        kwargs["temperature"] = params.temperature
    if params.stop_sequences:
        kwargs[stop] = list(params.stop_sequences)
    return kwargs


def _tool_use(name: str, call_id: Any, raw: Any, names: NameMap, where: str) -> types.ToolUseContent:
    """The model's call of a tool (*raw*: its arguments, JSON text or an object)."""
    if not isinstance(name, str) or not isinstance(call_id, str):
        raise ProviderResponseError(f"{where} has no id or name")
    name = names.to_mcp.get(name, name)
    if isinstance(raw, str):
        try:
            raw = json.loads(raw or "{}")
        except json.JSONDecodeError:
            raise ProviderResponseError(f"the model's arguments for {name!r} are not valid JSON") from None
    if not isinstance(raw, dict):
        raise ProviderResponseError(f"the model's arguments for {name!r} are not a JSON object")
    return types.ToolUseContent(call_id, name, raw)


def _answer(blocks: list[Any], response: Any, model: str, reason: Any, stops: dict[str, str], names: NameMap,
            where: str) -> types.CreateMessageResult:
    """The result of the model's answer: its text and tool-use *blocks* (Anthropic's shape), read."""
    content: list[Any] = []
    for block in blocks:
        kind = field(block, "type")
        if kind == "text":
            content.append(types.TextContent(str(field(block, "text") or "")))
        elif kind == "tool_use":
            content.append(_tool_use(field(block, "name"), field(block, "id"), field(block, "input"), names, where))
    single = content[0] if len(content) == 1 else content or types.TextContent("")
    return types.CreateMessageResult(single, model=str(field(response, "model") or model),
                                     stop_reason=stops.get(reason, reason))


# -- OpenAI Chat Completions ------------------------------------------------


def openai_sampling_handler(client: Any, *, model: str, approve: Approve | None = None, max_tokens: int = MAX_TOKENS,
                            system_prompt: SystemPolicy = "drop", **create_options: Any) -> Handler:
    """A ``sampling_handler`` calling ``client.chat.completions.create`` (an ``openai.OpenAI``).

    :param model: the model to use.
    :param approve: ``approve(request)`` before anything is sent: ``True`` sends
        it, a :class:`~mcpsync.types.CreateMessageRequestParams` is sent instead
        (edited), anything else refuses it (the server gets error ``-1``, "User
        rejected sampling request").  Runs on a handler thread and may block (ask the user).
    :param max_tokens: the most tokens a server may ask for (its ``maxTokens``
        is clamped to this).
    :param system_prompt: what becomes of the server's system prompt:
        ``"drop"`` (the default), ``"keep"``, or a function of it returning
        the prompt to send (``None``: none).
    :param create_options: more arguments for ``create`` (``top_p``, ``timeout``, ...).
    :raises ProviderResponseError: (from the handler) an answer it cannot read;
        the server then gets an error.
    """
    return _handler(OPENAI_LIMIT, lambda **kwargs: client.chat.completions.create(**kwargs), _chat_request,
                    _chat_answer, model, approve, max_tokens, system_prompt, create_options)


def _chat_request(params: Params, names: NameMap, model: str) -> dict[str, Any]:
    kwargs = {"model": model, "messages": _chat_messages(params, names), "max_completion_tokens": params.max_tokens}
    if params.tools:
        kwargs["tools"] = [openai_tool(t, names.to_provider[t.name], "chat") for t in params.tools]
        if params.tool_choice is not None and params.tool_choice.mode:
            kwargs["tool_choice"] = params.tool_choice.mode
    return _options(params, kwargs, "stop")


def _chat_messages(params: Params, names: NameMap) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if params.system_prompt:
        messages.append({"role": "system", "content": params.system_prompt})
    for message in params.messages:
        parts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        results = []
        for block in _blocks(message):
            if isinstance(block, types.TextContent):
                parts.append({"type": "text", "text": block.text})
            elif isinstance(block, types.ImageContent) and block.mime_type in IMAGE_TYPES:
                parts.append({"type": "image_url", "image_url": {"url": Image(block.mime_type, block.data).data_url}})
            elif isinstance(block, types.ToolUseContent):
                function = {"name": names.to_provider.get(block.name, block.name), "arguments": json.dumps(block.input)}
                calls.append({"id": block.id, "type": "function", "function": function})
            elif isinstance(block, types.ToolResultContent):
                results.append(_tool_result(block))
            else:
                parts.append({"type": "text", "text": _placeholder(block)})
        messages += chat_results(results)
        if message.role == "assistant":
            turn: dict[str, Any] = {"role": "assistant", "content": "\n".join(p.get("text", "") for p in parts) or None}
            if calls:
                turn["tool_calls"] = calls
            messages.append(turn)
        elif parts:
            messages.append({"role": "user", "content": parts})
    return messages


def _chat_answer(response: Any, names: NameMap, model: str) -> types.CreateMessageResult:
    choices = field(response, "choices")
    if not isinstance(choices, list) or not choices or field(choices[0], "message") is None:
        raise ProviderResponseError("the chat completion has no choices[0].message")
    message = field(choices[0], "message")
    blocks = [{"type": "text", "text": field(message, "content")}] if field(message, "content") else []
    blocks += [{"type": "tool_use", "id": field(call, "id"), "name": field(field(call, "function"), "name"),
                "input": field(field(call, "function"), "arguments")} for call in field(message, "tool_calls") or []]
    return _answer(blocks, response, model, field(choices[0], "finish_reason"), _CHAT_STOP, names,
                   "a tool call in the chat completion")


# -- Anthropic Messages -----------------------------------------------------


def anthropic_sampling_handler(client: Any, *, model: str, approve: Approve | None = None,
                               max_tokens: int = MAX_TOKENS, system_prompt: SystemPolicy = "drop",
                               **create_options: Any) -> Handler:
    """A ``sampling_handler`` calling ``client.messages.create`` (an ``anthropic.Anthropic``).

    :param model: the model to use.
    :param approve: as for :func:`openai_sampling_handler`.
    :param max_tokens: as for :func:`openai_sampling_handler`.
    :param system_prompt: as for :func:`openai_sampling_handler`.
    :param create_options: more arguments for ``create`` (``top_k``, ``timeout``, ...).
    :raises ProviderResponseError: (from the handler) an answer it cannot read.
    """
    return _handler(ANTHROPIC_LIMIT, lambda **kwargs: client.messages.create(**kwargs), _anthropic_request,
                    _anthropic_answer, model, approve, max_tokens, system_prompt, create_options)


def _anthropic_request(params: Params, names: NameMap, model: str) -> dict[str, Any]:
    messages = [{"role": m.role, "content": [_anthropic_block(b, names) for b in _blocks(m)]} for m in params.messages]
    kwargs: dict[str, Any] = {"model": model, "max_tokens": params.max_tokens, "messages": messages}
    if params.system_prompt:
        kwargs["system"] = params.system_prompt
    if params.tools:
        kwargs["tools"] = [anthropic_tool(t, names.to_provider[t.name]) for t in params.tools]
        if params.tool_choice is not None and params.tool_choice.mode in _ANTHROPIC_CHOICE:
            kwargs["tool_choice"] = _ANTHROPIC_CHOICE[params.tool_choice.mode]
    return _options(params, kwargs, "stop_sequences")


def _anthropic_block(block: Any, names: NameMap) -> dict[str, Any]:
    if isinstance(block, types.TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, types.ImageContent) and block.mime_type in IMAGE_TYPES:
        return {"type": "image", "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}
    if isinstance(block, types.ToolUseContent):
        return {"type": "tool_use", "id": block.id, "name": names.to_provider.get(block.name, block.name),
                "input": block.input}
    if isinstance(block, types.ToolResultContent):
        result: dict[str, Any] = anthropic_results([_tool_result(block)])[0]["content"][0]
        return result
    return {"type": "text", "text": _placeholder(block)}


def _anthropic_answer(response: Any, names: NameMap, model: str) -> types.CreateMessageResult:
    blocks = field(response, "content")
    if not isinstance(blocks, list):
        raise ProviderResponseError("the Anthropic message has no content list")
    return _answer(blocks, response, model, field(response, "stop_reason"), _ANTHROPIC_STOP, names,
                   "a tool_use block of the Anthropic message")
