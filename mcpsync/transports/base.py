"""The transport seam: a tiny ABC every transport implements.

Contract (the session engine and :class:`~mcpsync.Client` rely on it):

* :meth:`Transport.start` is called once, with two callbacks.  From then on the
  transport calls ``on_message(obj)`` for each JSON value it receives (already
  parsed; may be any JSON value, validation is the session's job) and calls
  ``on_close(exc)`` exactly once when the connection ends, for whatever reason
  (``exc`` is a :class:`~mcpsync.exceptions.ConnectionClosed` describing why).
  Callbacks are invoked from the transport's own reader thread(s) and must not
  block for long.
* A transport that can lose one reply without losing the connection (HTTP)
  may accept a third, keyword argument ``on_request_error(request_id, exc)``
  in :meth:`Transport.start`; the client then fails just that request.
* :meth:`Transport.send` is thread-safe and writes one whole message or
  nothing.  It raises :class:`~mcpsync.exceptions.ConnectionClosed` (or another
  :class:`~mcpsync.exceptions.TransportError`) when the message cannot be sent.
* A transport whose :meth:`Transport.send` can block (a full pipe, a slow
  socket, an HTTP exchange) accepts a keyword ``deadline`` (a
  ``time.monotonic()`` value: the call's deadline) and gives up by then with
  :class:`~mcpsync.exceptions.RequestTimeout`, leaving the connection usable
  unless a frame was cut in half.  One that can hand the exchange to a worker
  itself (HTTP) also accepts ``detach=True`` (``request_async``: return at
  once; a failure reaches the request through ``on_request_error``); for one
  that takes ``deadline`` but not ``detach`` the session writes on a
  short-lived thread.  The client finds these keywords in ``send``'s
  signature; a transport without them is called with the message alone.
* :meth:`Transport.close` is idempotent, callable from any thread, and bounded
  in time.  It triggers ``on_close`` if that has not happened yet.
"""

from __future__ import annotations

import abc
import json
from typing import Any, Callable, Mapping

__all__ = ["Transport", "MessageHandler", "CloseHandler", "encode_message"]

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

    Done before any lock is taken, so bad input (``NaN``, lone surrogates,
    objects JSON cannot represent) raises ``ValueError``/``TypeError`` in the
    caller and nothing partial is ever written.

    :raises ValueError: for NaN/Infinity or text that is not valid Unicode.
    :raises TypeError: for values JSON cannot represent.
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


class Transport(abc.ABC):
    """A bidirectional channel carrying JSON-RPC messages to one MCP server."""

    @abc.abstractmethod
    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        """Open the connection and begin delivering messages.

        :raises ~mcpsync.exceptions.ServerStartError: when the peer cannot be reached or started.
        """

    @abc.abstractmethod
    def send(self, message: Mapping[str, Any]) -> None:
        """Send one message, whole, thread-safely.

        :raises ~mcpsync.exceptions.ConnectionClosed: when the connection is gone.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Close the connection; idempotent and bounded in time."""

    def forget(self) -> None:
        """In a forked child: drop inherited OS handles without touching the peer.

        The default does nothing.  It must never signal, write to or shut
        down anything the parent process still uses.
        """

    def describe(self) -> str:
        """A short human-readable description for logs and errors (no secrets)."""
        return type(self).__name__
