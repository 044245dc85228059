"""Multi round-trip requests (MRTR, 2026-07-28): a result that asks the client for input first.

A modern server may answer ``tools/call``, ``prompts/get``, ``resources/read`` (and
``skills/get``) with ``resultType: "input_required"``: the input requests it needs
(sampling, elicitation, roots) and an opaque ``requestState``.  The client runs the same
handlers a handshake-era server reaches with server-to-client requests, on the same
workers, then sends the request again with ``inputResponses`` and the echoed state, until
the result is complete.  :func:`request_until_complete` is that loop; :func:`input_response`
turns one handler's outcome into the answer (tasks use it for ``tasks/update`` too).
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from mcpsync import types
from mcpsync.client.options import TimeoutArg
from mcpsync.exceptions import McpError, ProtocolError, RequestTimeout, ServerError
from mcpsync.rpc.session import ProgressCallback

if TYPE_CHECKING:
    from mcpsync.client.connection import Connection

__all__ = ["answer_inputs", "request_until_complete", "input_response"]


def request_until_complete(
    request: Callable[..., dict[str, Any]],
    connection: Callable[[], Connection],
    method: str,
    params: dict[str, Any],
    *,
    max_rounds: int,
    timeout: float | None,
    progress: ProgressCallback | None = None,
    reset_timeout_on_progress: bool = True,
    max_total_timeout: float | None = None,
    retry: bool | None = None,
    accept: tuple[str, ...] = (),
    first: dict[str, Any] | None = None,
    started: float | None = None,
) -> dict[str, Any]:
    """Send *method* with :meth:`mcpsync.Client.request` and return its complete raw result,
    answering up to *max_rounds* ``input_required`` rounds on the way.

    A result whose ``resultType`` is in *accept* (e.g. ``"task"``) is returned as it is.

    :param timeout: seconds left for the whole call, every round and every input handler
        included (``None``: no limit).
    :param request: sends one round (the client's ``request``: policies, lazy connect).
    :param connection: the client's open connection (its handler workers answer the inputs).
    :param first: the first round's result, when the caller already sent it.
    :param started: when the call began (default: now); *max_total_timeout* counts from there.
    :raises ProtocolError: for an unknown ``resultType``, or still ``input_required`` after
        *max_rounds* rounds.
    """
    attempt = dict(params)
    now = time.monotonic()
    if started is None:
        started = now
    deadline = None if timeout is None else now + timeout
    for _ in range(max_rounds + 1):
        if first is not None:
            raw, first = first, None
        else:
            # max_total_timeout is one hard cap across all rounds, not one per round.
            left = None if max_total_timeout is None else max_total_timeout - (time.monotonic() - started)
            if left is not None and left <= 0:
                raise RequestTimeout(f"{method}: max_total_timeout ({max_total_timeout}s) spent across"
                                     " input_required rounds", method=method,
                                     elapsed=time.monotonic() - started)
            raw = request(
                method,
                attempt,
                timeout=_left(deadline),
                progress=progress,
                reset_timeout_on_progress=reset_timeout_on_progress,
                max_total_timeout=left,
                retry=retry,
            )
        kind = raw.get("resultType")
        if kind is None or kind == "complete" or kind in accept:
            return raw
        if kind != "input_required":
            raise ProtocolError(f"{method}: unsupported resultType {str(kind)[:40]!r}")
        needed = types.from_wire(types.InputRequiredResult, raw)
        attempt = dict(params)
        if needed.input_requests:
            attempt["inputResponses"] = answer_inputs(connection(), method, needed.input_requests, _left(deadline))
        if needed.request_state is not None:
            attempt["requestState"] = needed.request_state
    raise ProtocolError(f"{method}: still input_required after {max_rounds} rounds")


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def answer_inputs(
    conn: Connection, method: str, requests: Mapping[str, types.InputRequest], timeout: float | None
) -> dict[str, dict[str, Any]]:
    """Run the handlers of *requests* concurrently on the handler workers (as legacy server
    requests are) and return their answers by key, within *timeout* seconds.

    :raises RequestTimeout: a handler did not finish in time (its answer is not sent).
    :raises ClientClosed: the client was closed meanwhile.
    """
    futures = {key: conn.run_handler(request.method, request.params or {}) for key, request in requests.items()}
    _, late = concurrent.futures.wait(futures.values(), timeout=timeout)
    if late:
        raise RequestTimeout(f"{method}: the client's input handlers did not answer by the call's deadline",
                             method=method)
    return {key: input_response(conn, method, requests[key], future) for key, future in futures.items()}


def input_response(
    conn: Connection, method: str, request: types.InputRequest, future: Future[dict[str, Any]]
) -> dict[str, Any]:
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
        raise McpError(
            f"{method}: the client's {request.method} handler failed ({type(exc).__name__})"
        ) from exc
