"""Multi round-trip requests (MRTR, 2026-07-28): a result that asks the client for input first.

A modern server may answer ``tools/call``, ``prompts/get``, ``resources/read`` (and
``skills/get``) with ``resultType: "input_required"``: the input requests it needs
(sampling, elicitation, roots) and an opaque ``requestState``.  The client runs the same
handlers a handshake-era server reaches with server-to-client requests, on the same
workers, then sends the request again with ``inputResponses`` and the echoed state, until
the result is complete.  :func:`until_complete` is that loop; :func:`input_response`
turns one handler's outcome into the answer (tasks use it for ``tasks/update`` too).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from mcpsync import types
from mcpsync.exceptions import McpError, ProtocolError, ServerError
from mcpsync.rpc.deadline import Deadline

if TYPE_CHECKING:
    from mcpsync.client.connection import Connection

__all__ = ["answer_inputs", "until_complete", "input_response"]


def until_complete(send: Callable[[dict[str, Any]], dict[str, Any]], conn: Connection, method: str,
                   params: dict[str, Any], deadline: Deadline, accept: tuple[str, ...],
                   first: dict[str, Any]) -> dict[str, Any]:
    """The complete raw result of *method*, whose first round answered *first*: up to
    ``max_input_rounds`` more rounds, each sent through ``send(params)`` (the policies),
    every round and every input handler by the call's one *deadline*.

    A result whose ``resultType`` is in *accept* (e.g. ``"task"``) is returned as it is.

    :raises ProtocolError: for an unknown ``resultType``, or still ``input_required`` after
        the last round.
    """
    raw, attempt = first, params
    for round_ in range(conn.options.max_input_rounds + 1):
        if round_:
            raw = send(attempt)
        kind = raw.get("resultType")
        if kind is None or kind == "complete" or kind in accept:
            return raw
        if kind != "input_required":
            raise ProtocolError(f"{method}: unsupported resultType {str(kind)[:40]!r}")
        deadline.check(f"{method}: input_required rounds ran out of the call's time", method)
        needed = types.from_wire(types.InputRequiredResult, raw)
        attempt = dict(params)
        if needed.input_requests:
            attempt["inputResponses"] = answer_inputs(conn, method, needed.input_requests, deadline)
        if needed.request_state is not None:
            attempt["requestState"] = needed.request_state
    raise ProtocolError(f"{method}: still input_required after {conn.options.max_input_rounds} rounds")


def answer_inputs(conn: Connection, method: str, requests: Mapping[str, types.InputRequest],
                  deadline: Deadline) -> dict[str, dict[str, Any]]:
    """Run the handlers of *requests* concurrently on the handler workers (as legacy server
    requests are) and return their answers by key, by *deadline*.

    :raises RequestTimeout: a handler did not finish in time (its answer is not sent).
    :raises ClientClosed: the client was closed meanwhile.
    """
    futures = {key: conn.run_handler(request.method, request.params or {}) for key, request in requests.items()}
    _, late = concurrent.futures.wait(futures.values(), timeout=deadline.remaining())
    if late:
        raise deadline.expired(f"{method}: the client's input handlers did not answer", method)
    return {key: input_response(conn, method, requests[key], future) for key, future in futures.items()}


def input_response(conn: Connection, method: str, request: types.InputRequest,
                   future: Future[dict[str, Any]]) -> dict[str, Any]:
    """The answer to one input request of *method*, once its handler (run by
    :meth:`~mcpsync.client.connection.Connection.run_handler`) finished.

    :raises ProtocolError: the server asked for something this client has no handler for.
    :raises McpError: the handler failed (its exception went to ``exception_handler``).
    """
    try:
        return future.result()
    except ServerError as exc:
        if exc.code == -32601:
            raise ProtocolError(
                f"{method}: server asked for {request.method!r}, which this client has no"
                " handler for (and did not declare)"
            ) from None
        raise
    except McpError:
        raise
    except Exception as exc:
        # As in the handshake era: the exception goes to exception_handler, and what
        # escapes is an McpError that names the handler, not its (maybe sensitive) text.
        conn.report(exc)
        raise McpError(f"{method}: the client's {request.method} handler failed ({type(exc).__name__})") from exc
