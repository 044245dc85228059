"""Ask an OpenAI model a question it answers with the tools of MCP servers.

::

    OPENAI_API_KEY=sk-... python examples/llm_openai.py "What is 2 + 3?"
    python examples/llm_openai.py --api responses "What is the weather in Paris?"

The tools are those of the servers in an ``mcpServers`` file (``MCP_CONFIG=path``),
or of the bundled demo server.  ``LLM_MODEL`` picks the model (default
``gpt-5-mini``); the SDK reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``.
``tests/test_llm_examples.py`` runs this script against a scripted model.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import openai

from mcpsync import ClientGroup
from mcpsync.llm import openai_tools, run_tool_calls

#: A model that keeps calling tools is stopped after this many rounds.
MAX_ROUNDS = 10
DEMO = {"mcpServers": {"demo": {"command": sys.executable, "args": ["-m", "mcpsync.demo"]}}}


def servers() -> ClientGroup:
    """The MCP servers: ``MCP_CONFIG``'s, or the demo server.  Nothing starts until first use."""
    return ClientGroup.from_config(os.environ.get("MCP_CONFIG") or DEMO)


def ask(llm: openai.OpenAI, group: ClientGroup, question: str, *, model: str, api: str = "chat") -> str:
    """Run the tool loop until the model answers; its answer."""
    if api == "responses":
        return _ask_responses(llm, group, question, model=model)
    tools = openai_tools(group)
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(MAX_ROUNDS):
        response = llm.chat.completions.create(model=model, messages=messages, tools=tools)
        results = run_tool_calls(group, response, timeout=60)
        if not results:  # no tool call: this is the answer
            return response.choices[0].message.content or ""
        messages += [response.choices[0].message, *results]
    raise RuntimeError(f"the model was still calling tools after {MAX_ROUNDS} rounds")


def _ask_responses(llm: openai.OpenAI, group: ClientGroup, question: str, *, model: str) -> str:
    tools = openai_tools(group, api="responses")
    items: list[Any] = [{"role": "user", "content": question}]
    for _ in range(MAX_ROUNDS):
        response = llm.responses.create(model=model, input=items, tools=tools)
        results = run_tool_calls(group, response, timeout=60)
        if not results:
            return response.output_text
        items += [*response.output, *results]
    raise RuntimeError(f"the model was still calling tools after {MAX_ROUNDS} rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description="Ask an OpenAI model, with MCP tools.")
    parser.add_argument("question")
    parser.add_argument("--api", choices=["chat", "responses"], default="chat")
    args = parser.parse_args()
    with servers() as group, openai.OpenAI() as llm:
        print(
            ask(llm, group, args.question, model=os.environ.get("LLM_MODEL", "gpt-5-mini"), api=args.api)
        )
        for name, error in group.errors.items():
            print(f"(server {name} was not available: {error})", file=sys.stderr)


if __name__ == "__main__":
    main()
