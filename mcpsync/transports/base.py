"""The transport seam: four methods, nothing negotiated, nothing sniffed.

* :meth:`Transport.start` is called once, with two callbacks.  From then on the
  transport calls ``on_message(obj)`` for each JSON value it receives (already parsed;
  validation is the session's job) and ``on_close(exc)`` exactly once when the
  connection ends, for whatever reason (``exc`` is a
  :class:`~mcpsync.exceptions.ConnectionClosed` saying why).  Callbacks run on the
  transport's own threads, or on the thread of a :meth:`~Transport.send` that reads its
  own reply (HTTP), and must not block for long.
* :meth:`Transport.send` is thread-safe and sends one whole message or nothing, by
  the :class:`~mcpsync.rpc.deadline.Deadline` it is given (``None``: the transport's
  own bound); past it, it raises :class:`~mcpsync.exceptions.RequestTimeout`, leaving
  the connection usable unless a frame was cut in half.  A failure that concerns only
  this message (an HTTP exchange whose reply was lost) is raised here, for its request
  alone; a failure of the connection goes to ``on_close`` too.  Where each request has
  its own exchange (HTTP), ``send`` is that whole exchange, up to the reply, which it
  delivers through ``on_message`` before it returns.
* :meth:`Transport.close` is idempotent, callable from any thread, bounded in time,
  and triggers ``on_close`` if that has not happened yet.
* :meth:`Transport.forget` runs in a forked child: drop inherited OS handles without
  touching the peer.

Detaching a send (``request_async``) is the session's business, above this seam.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Mapping
from typing import Any

from mcpsync.rpc.deadline import Deadline

__all__ = ["CloseHandler", "Deadline", "MessageHandler", "Transport", "encode_message"]

#: The one notification a transport looks into: a request cancelled is no longer awaited.
CANCELLED = "notifications/cancelled"


def _not_json(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# The C encoder itself, made once: JSONEncoder.encode builds a new one per call (and a
# dict to find cycles; without it a cycle ends in RecursionError, turned into ValueError
# below).  It keeps no state between calls, so sharing it between threads is safe.
_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODER = (
    _make_encoder(None, _not_json, json.encoder.encode_basestring, None, ":", ",", False, False, False)
    if _make_encoder is not None
    else None
)
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"), ensure_ascii=False)

#: Called with each parsed JSON value received from the peer.
MessageHandler = Callable[[Any], None]
#: Called once when the connection ends, with the reason.
CloseHandler = Callable[[BaseException], None]


def encode_message(message: Mapping[str, Any]) -> bytes:
    """Serialise one JSON-RPC message to compact UTF-8 JSON, without a newline.

    Done before any lock is taken, so bad input (``NaN``, lone surrogates, objects
    JSON cannot represent) raises ``ValueError``/``TypeError`` in the caller and
    nothing partial is ever written.
    """
    if _C_ENCODER is not None:
        try:
            text = "".join(_C_ENCODER(message, 0))
        except RecursionError:
            raise ValueError("message is circular or nested too deeply") from None
    else:  # an interpreter without the C accelerator
        text = _ENCODER.encode(message)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"message contains text that is not valid Unicode: {exc.reason}") from None


def cancelled_request_id(message: Mapping[str, Any]) -> int | str | None:
    """The id a ``notifications/cancelled`` names, if it names one."""
    params = message.get("params")
    request_id = params.get("requestId") if isinstance(params, dict) else None
    return request_id if isinstance(request_id, (int, str)) else None


class Transport(abc.ABC):
    """A bidirectional channel carrying JSON-RPC messages to one MCP server."""

    @abc.abstractmethod
    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        """Open the connection (or get ready to) and begin delivering messages.

        :raises ~mcpsync.exceptions.ServerStartError: when the peer cannot be reached or started.
        """

    @abc.abstractmethod
    def send(self, message: Mapping[str, Any], deadline: Deadline | None = None) -> None:
        """Send one message, whole, thread-safely, by *deadline*.

        :raises ~mcpsync.exceptions.ConnectionClosed: when the connection is gone.
        :raises ~mcpsync.exceptions.RequestTimeout: when *deadline* passed first.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Close the connection; idempotent and bounded in time."""

    def forget(self) -> None:
        """In a forked child: drop inherited OS handles without touching the peer (default: nothing)."""

    def describe(self) -> str:
        """A short human-readable description for logs and errors (no secrets)."""
        return type(self).__name__
