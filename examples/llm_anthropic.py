"""Ask a Claude model a question it answers with the tools of MCP servers.

::

    ANTHROPIC_API_KEY=sk-ant-... python examples/llm_anthropic.py "What is 2 + 3?"

The tools are those of the servers in an ``mcpServers`` file (``MCP_CONFIG=path``),
or of the bundled demo server.  ``LLM_MODEL`` picks the model (default
``claude-sonnet-5-5``); the SDK reads ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``.
``tests/test_llm_examples.py`` runs this script against a scripted model.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anthropic

from mcpsync import ClientGroup
from mcpsync.llm import anthropic_tools, run_tool_calls

MAX_ROUNDS = 10
DEMO = {"mcpServers": {"demo": {"command": sys.executable, "args": ["-m", "mcpsync.demo"]}}}


def ask(llm: anthropic.Anthropic, group: ClientGroup, question: str, *, model: str) -> str:
    """Run the tool loop until the model answers; its answer."""
    tools = anthropic_tools(group)
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(MAX_ROUNDS):
        response = llm.messages.create(model=model, max_tokens=1024, messages=messages, tools=tools)
        # One user message of tool_result blocks, or nothing when the model is done.
        results = run_tool_calls(group, response, timeout=60)
        if not results:
            return "".join(block.text for block in response.content if block.type == "text")
        messages += [{"role": "assistant", "content": response.content}, *results]
    raise RuntimeError(f"the model was still calling tools after {MAX_ROUNDS} rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description="Ask a Claude model, with MCP tools.")
    parser.add_argument("question")
    args = parser.parse_args()
    with ClientGroup.from_config(
        os.environ.get("MCP_CONFIG") or DEMO
    ) as group, anthropic.Anthropic() as llm:
        print(ask(llm, group, args.question, model=os.environ.get("LLM_MODEL", "claude-sonnet-5-5")))
        for name, error in group.errors.items():
            print(f"(server {name} was not available: {error})", file=sys.stderr)


if __name__ == "__main__":
    main()
