"""The bridge between MCP tools and the LLM SDKs (``openai``, ``anthropic``).

::

    import openai
    from mcpsync import ClientGroup
    from mcpsync.llm import openai_tools, run_tool_calls

    group = ClientGroup.from_config("mcp.json")
    llm = openai.OpenAI()
    messages = [{"role": "user", "content": "What is 2 + 3?"}]
    while True:
        resp = llm.chat.completions.create(model="gpt-4.1", messages=messages, tools=openai_tools(group))
        results = run_tool_calls(group, resp)
        if not results:
            break
        messages += [resp.choices[0].message, *results]
    print(resp.choices[0].message.content)

Nothing here imports an LLM SDK: the functions build and read plain dicts
(and the SDKs' response objects, duck-typed), so ``pip install
'mcpsync[openai]'`` or ``'mcpsync[anthropic]'`` is needed only for the SDK
you call yourself.  A *source* is a :class:`~mcpsync.Client` or a
:class:`~mcpsync.ClientGroup`.

May import: group, client, types, exceptions; never an LLM SDK, the CLI or testing.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from typing import Any, Literal

from mcpsync.client.options import DEFAULT, TimeoutArg
from mcpsync.llm.errors import ProviderResponseError
from mcpsync.llm._calls import parse_calls, run_calls
from mcpsync.llm._names import ANTHROPIC_LIMIT, OPENAI_LIMIT, name_map
from mcpsync.llm._sampling import anthropic_sampling_handler, openai_sampling_handler
from mcpsync.llm._schema import anthropic_tool, for_model, object_schema, openai_tool

__all__ = ["ProviderResponseError", "anthropic_sampling_handler", "anthropic_tools", "object_schema",
           "openai_sampling_handler", "openai_tools", "run_tool_calls"]


def openai_tools(source: Any, *, api: Literal["chat", "responses"] = "chat",
                 timeout: TimeoutArg = DEFAULT) -> list[dict[str, Any]]:
    """The tools of *source* as OpenAI function tools, for ``tools=``.

    ``api="chat"`` (Chat Completions) or ``"responses"`` (the Responses API;
    each tool says ``"strict": False``, as MCP schemas rarely meet strict
    mode's rules).  Names are made to fit OpenAI's (64 characters of
    ``[a-zA-Z0-9_-]``) and mapped back by :func:`run_tool_calls`; schemas get
    ``type: object`` and ``properties`` where missing.  A tool that MCP Apps makes
    app-only (its visibility lacks ``"model"``) is left out, here and in
    :func:`anthropic_tools`.
    """
    if api not in ("chat", "responses"):
        raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")
    return [openai_tool(tool, name, api) for tool, name in _offered(source, OPENAI_LIMIT, timeout)]


def anthropic_tools(source: Any, *, timeout: TimeoutArg = DEFAULT) -> list[dict[str, Any]]:
    """The tools of *source* for the Anthropic Messages API's ``tools=``.

    Names are made to fit (128 characters of ``[a-zA-Z0-9_-]``) and mapped
    back by :func:`run_tool_calls`; schemas are object schemas.
    """
    return [anthropic_tool(tool, name) for tool, name in _offered(source, ANTHROPIC_LIMIT, timeout)]


def _offered(source: Any, limit: int, timeout: TimeoutArg) -> list[tuple[Any, str]]:
    """The tools a model may be offered, each with its provider name (remembered for the way back)."""
    tools = for_model(source.list_tools(timeout=timeout))
    names = name_map(source, [t.name for t in tools], limit).to_provider
    return [(tool, names[tool.name]) for tool in tools]


def run_tool_calls(source: Any, response: Any, *, timeout: float | None = None) -> list[dict[str, Any]]:
    """Run every tool call of a provider response through MCP; what to append after it.

    *response* is an OpenAI chat completion (or its first choice's message),
    an OpenAI Responses result, or an Anthropic message, as the SDK's object
    or as a dict.  The calls run concurrently, each within *timeout* seconds
    (``None``: the source's default timeout).  Returned, in call order:

    * Chat Completions: a ``role: "tool"`` message per call, then one user
      message with any images (tool messages carry only text);
    * Responses: a ``function_call_output`` item per call;
    * Anthropic: one user message of ``tool_result`` blocks.

    An empty list means the model asked for no tool: its answer is final.
    A failed tool, an unknown tool name, arguments that are not a JSON
    object, a timeout or a server error become results the model reads
    (``is_error`` on Anthropic, text starting ``"Error: "`` on OpenAI), never
    an exception; so does a call to a tool not visible to the model (MCP Apps),
    which is never sent.

    :raises ProviderResponseError: *response* is not a response of a known
        provider, or a tool call in it has no id or name.
    """
    provider, calls = parse_calls(response)
    return run_calls(source, provider, calls, timeout)
