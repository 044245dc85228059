"""The user's handlers for what a server asks of the client.

The same handlers answer both eras: a handshake-era server sends
``roots/list``, ``sampling/createMessage`` and ``elicitation/create`` as
requests; a modern server puts them in an ``input_required`` result (MRTR).
"""

from __future__ import annotations

from typing import Any

from mcpsync import types
from mcpsync.client.options import ClientOptions, normalize_roots
from mcpsync.exceptions import ServerError

__all__ = ["answer_server_request"]


def answer_server_request(options: ClientOptions, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run the configured handler for *method* and return its wire-format result.

    :raises ServerError: -32601 when no handler is configured for *method*.
    :raises ProtocolError: when *params* are malformed.
    :raises TypeError: when a handler returns the wrong type.
    """
    if method == "roots/list" and options.roots is not None:
        return types.to_wire(types.ListRootsResult(roots=normalize_roots(options.roots)))
    if method == "sampling/createMessage" and options.sampling_handler is not None:
        request = types.from_wire(types.CreateMessageRequestParams, params)
        reply = options.sampling_handler(request)
        return _as_wire(reply, types.CreateMessageResult, "sampling_handler")
    if method == "elicitation/create" and options.elicitation_handler is not None:
        elicit: Any
        if params.get("mode") == "url":
            elicit = types.from_wire(types.ElicitRequestURLParams, params)
        else:
            elicit = types.from_wire(types.ElicitRequestFormParams, params)
        reply = options.elicitation_handler(elicit)
        return _as_wire(reply, types.ElicitResult, "elicitation_handler")
    raise ServerError(-32601, f"method not found: {method}")


def _as_wire(reply: Any, cls: type[Any], who: str) -> dict[str, Any]:
    if isinstance(reply, cls):
        return types.to_wire(reply)
    if isinstance(reply, dict):
        # Accept a wire-format dict, but validate it through the type.
        return types.to_wire(types.from_wire(cls, reply))
    raise TypeError(f"{who} must return {cls.__name__}, not {type(reply).__name__}")
