"""A Flask view that answers questions with an LLM and the tools of MCP servers.

::

    OPENAI_API_KEY=sk-... flask --app examples/flask_llm.py run
    curl -X POST localhost:5000/ask -H 'content-type: application/json' -d '{"question": "2 + 3?"}'

``LLM_PROVIDER=anthropic`` (with ``ANTHROPIC_API_KEY``) uses Claude instead.  One
:class:`~mcpsync.ClientGroup` per process, created at import and connected on first use
(so ``gunicorn --preload`` is fine), is shared by every request thread; the loops are
those of ``llm_openai.py`` and ``llm_anthropic.py`` beside this file.
``tests/test_llm_examples.py`` drives it with Flask's test client and a scripted model.
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
from pathlib import Path
from typing import Any

from flask import Flask, jsonify, request

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the two example scripts

import anthropic  # noqa: E402
import llm_anthropic  # noqa: E402
import llm_openai  # noqa: E402
import openai  # noqa: E402

import mcpsync  # noqa: E402

group = llm_openai.servers()
atexit.register(group.close)


@functools.cache
def llm() -> Any:
    """The provider's client, made on first use (it reads its key from the environment)."""
    if os.environ.get("LLM_PROVIDER") == "anthropic":
        return anthropic.Anthropic()
    return openai.OpenAI()


def answer(question: str) -> str:
    if os.environ.get("LLM_PROVIDER") == "anthropic":
        return llm_anthropic.ask(
            llm(), group, question, model=os.environ.get("LLM_MODEL", "claude-sonnet-5-5")
        )
    return llm_openai.ask(llm(), group, question, model=os.environ.get("LLM_MODEL", "gpt-5-mini"))


app = Flask(__name__)


@app.post("/ask")
def ask():  # type: ignore[no-untyped-def]
    question = (request.get_json(silent=True) or {}).get("question")
    if not isinstance(question, str) or not question:
        return jsonify(error='send {"question": "..."}'), 400
    # Tool failures reach the model as results; servers that were down are listed here.
    return jsonify(answer=answer(question), unavailable=sorted(group.errors))


@app.errorhandler(mcpsync.McpError)
@app.errorhandler(openai.APIError)
@app.errorhandler(anthropic.APIError)
def backend_failed(exc: Exception):  # type: ignore[no-untyped-def]
    # The MCP servers and the LLM are backends: their failures are a 502, not a crash page.
    return jsonify(error=type(exc).__name__, message=str(exc)), 502
