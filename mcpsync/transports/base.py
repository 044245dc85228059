"""The transport seam: the ABC every transport implements, declaring all the connection uses.

Contract (the session engine and :class:`~mcpsync.Client` rely on it; nothing
else about a transport is looked up, by ``getattr`` or by signature):

* :meth:`Transport.start` is called once, with two callbacks.  From then on the
  transport calls ``on_message(obj)`` for each JSON value it receives (already
  parsed; may be any JSON value, validation is the session's job) and calls
  ``on_close(exc)`` exactly once when the connection ends, for whatever reason
  (``exc`` is a :class:`~mcpsync.exceptions.ConnectionClosed` describing why).
  Callbacks are invoked from the transport's own reader thread(s) and must not
  block for long.
* A transport that can lose one reply without losing the connection (HTTP)
  sets :attr:`Transport.independent_requests`; the connection then passes a
  third callback, ``on_request_error(request_id, exc)``, to
  :meth:`Transport.start`, and the transport calls it to fail just that request.
* :meth:`Transport.send` is thread-safe and writes one whole message or
  nothing.  It raises :class:`~mcpsync.exceptions.ConnectionClosed` (or another
  :class:`~mcpsync.exceptions.TransportError`) when the message cannot be sent.
* A transport whose :meth:`Transport.send` can block (a full pipe, a slow
  socket, an HTTP exchange) sets :attr:`Transport.bounded_send` and honours the
  keyword ``deadline`` (a ``time.monotonic()`` value: the call's deadline): it
  gives up by then with :class:`~mcpsync.exceptions.RequestTimeout`, leaving the
  connection usable unless a frame was cut in half.  One that can hand the
  exchange to a worker itself (HTTP) also sets :attr:`Transport.detached_send`
  and honours ``detach=True`` (``request_async``: return at once; a failure
  reaches the request through ``on_request_error``); for one that bounds its
  sends but cannot detach, the session writes on a short-lived thread.
* :meth:`Transport.caller_reader` may offer a fast path: a function with which
  a caller waiting for the only pending reply reads it in its own thread
  (stdio; see docs/threading.rst).  The default offers none.
* :meth:`Transport.close` is idempotent, callable from any thread, and bounded
  in time.  It triggers ``on_close`` if that has not happened yet.

A transport written against the first, smaller form of this ABC
(``start(on_message, on_close)``, ``send(message)``) keeps working: the three
flags default to ``False``, so the connection never passes it the extra
callback or keywords, and :meth:`Transport.caller_reader` defaults to ``None``.
"""

from __future__ import annotations

import abc
import json
from typing import Any, Callable, ClassVar, Mapping

from mcpsync.rpc.session import CallerReader

__all__ = [
    "CallerReader",
    "CloseHandler",
    "MessageHandler",
    "RequestErrorHandler",
    "Transport",
    "WriteErrorHandler",
    "encode_message",
]

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
#: ``(request_id, exc)``: fails one pending request (transports with independent requests).
RequestErrorHandler = Callable[["int | str", BaseException], None]
#: ``on_write_error(exc)``: the write of a frame :meth:`Transport.send` handed to another
#: thread failed later (it never went out, or went out cut in half).
WriteErrorHandler = Callable[[BaseException], None]


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

    #: Whether each request has its own reply channel (HTTP), so that losing one reply
    #: loses only that request: :meth:`start` then gets ``on_request_error``.  Also tells
    #: the client that requests do not share one ordered stream (stdio, WebSocket).
    independent_requests: ClassVar[bool] = False
    #: Whether :meth:`send` honours ``deadline=`` (its writes can block).
    bounded_send: ClassVar[bool] = False
    #: Whether :meth:`send` honours ``detach=True`` (it can hand the exchange to a worker).
    detached_send: ClassVar[bool] = False
    #: Whether :meth:`send` may hand the frame to a write in progress on another thread and
    #: report its failure later through ``on_write_error=`` (stdio: one write for many frames).
    handoff_send: ClassVar[bool] = False

    @abc.abstractmethod
    def start(
        self,
        on_message: MessageHandler,
        on_close: CloseHandler,
        on_request_error: RequestErrorHandler | None = None,
        *,
        deadline: float | None = None,
    ) -> None:
        """Open the connection and begin delivering messages.

        :param on_request_error: given only when :attr:`independent_requests`
            is set: fails one pending request whose reply was lost.
        :param deadline: ``time.monotonic()`` value by which the connection must be open
            (the connecting call's deadline); given only when :attr:`independent_requests`
            is set, so a transport with its own ``start(on_message, on_close)`` keeps working.
        :raises ~mcpsync.exceptions.ServerStartError: when the peer cannot be reached or started.
        """

    @abc.abstractmethod
    def send(
        self,
        message: Mapping[str, Any],
        *,
        deadline: float | None = None,
        detach: bool = False,
        on_write_error: WriteErrorHandler | None = None,
    ) -> None:
        """Send one message, whole, thread-safely.

        :param deadline: ``time.monotonic()`` value to give up by (given only
            when :attr:`bounded_send` is set).
        :param detach: do not wait for the exchange in this thread (given only
            when :attr:`detached_send` is set).
        :param on_write_error: called if a frame handed to another thread's write fails
            after this returned (given only when :attr:`handoff_send` is set).
        :raises ~mcpsync.exceptions.ConnectionClosed: when the connection is gone.
        :raises ~mcpsync.exceptions.RequestTimeout: when *deadline* passed first.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Close the connection; idempotent and bounded in time."""

    def caller_reader(self) -> CallerReader | None:
        """The caller-read fast path, or ``None`` (the default): not offered.

        The function returned is called as ``read(done, timeout, pending)`` by
        a caller waiting for a reply: it may read replies in the calling
        thread until ``done()`` (``pending()`` is how many replies are
        awaited), and returns when it hands back to the reader thread.
        """
        return None

    def forget(self) -> None:
        """In a forked child: drop inherited OS handles without touching the peer.

        The default does nothing.  It must never signal, write to or shut
        down anything the parent process still uses.
        """

    def describe(self) -> str:
        """A short human-readable description for logs and errors (no secrets)."""
        return type(self).__name__
