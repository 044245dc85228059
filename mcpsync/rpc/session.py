"""The JSON-RPC engine: ids, pending replies and demultiplexing, with no I/O.

:class:`Session` knows nothing about pipes, sockets or threads of a transport.  It
sends through a ``send(message, deadline)`` callable (a transport's
:meth:`~mcpsync.transports.base.Transport.send`) and receives through
:meth:`Session.feed`, which a transport's reader calls with every parsed message.
The rules it keeps (see docs/threading.rst):

* a request's :class:`Reply` is registered under :attr:`Session._lock` *before* the
  message is written, so a reply can never beat its registration;
* a reply is settled only by whoever pops its id from the pending map under that
  lock (the reader on a reply, the caller on timeout or cancel,
  :meth:`Session.fail_all` on close), so nothing is settled twice and a reply for a
  popped id is dropped;
* the lock is never held while sending or while waiting.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from mcpsync.exceptions import ConnectionClosed, ProtocolError, RequestCancelled, RequestTimeout, excerpt
from mcpsync.rpc.deadline import Deadline, now
from mcpsync.rpc.reply import Reply, clone_exception, normalize_id, outcome_of

__all__ = ["PendingRequest", "Reply", "Session", "in_call", "normalize_id"]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[float, "float | None", "str | None"], None]
#: Sends one whole message, bounded by the deadline (``None``: the transport's own bound).
SendFunction = Callable[[Mapping[str, Any], "Deadline | None"], None]
#: ``(method, params)`` for every notification from the server.
NotificationSink = Callable[[str, dict[str, Any]], None]
#: ``(request_id, method, params)`` for every server→client request but ``ping``.
RequestSink = Callable[["int | str", str, dict[str, Any]], None]
#: ``(pending, params)`` for a progress notification matched to a pending request.
ProgressSink = Callable[["PendingRequest", dict[str, Any]], None]

_NEVER_CANCEL = frozenset({"initialize"})
#: How many sends and waits of any session this thread is inside (see :func:`in_call`).
_calls = threading.local()
_senders = itertools.count(1)
#: Seconds a cancellation may take to write (it is best effort, and never the caller's wait).
_CANCEL_BOUND = 0.1


def in_call() -> bool:
    """Whether this thread is inside a send or a wait of a :class:`Session`.

    A signal handler runs on the main thread between two bytecodes of whatever it
    interrupted, which may hold a session, transport or reply lock.  Code that such a
    handler may call (``Client.close()``) asks this first, and then only starts its
    work on another thread instead of waiting for a lock the interrupted frame holds.
    """
    return getattr(_calls, "depth", 0) > 0


class PendingRequest:
    """A request sent and not yet answered; settled exactly once."""

    __slots__ = ("deadline", "id", "method", "on_progress", "progress_token", "reply")

    def __init__(self, request_id: int, method: str, deadline: Deadline) -> None:
        self.id = request_id
        self.method = method
        #: The outcome, settled once (see :class:`~mcpsync.rpc.reply.Reply`).
        self.reply = Reply()
        #: What the caller waits by; progress moves its window (reset-on-progress).
        self.deadline = deadline
        self.progress_token: int | str | None = None
        self.on_progress: ProgressCallback | None = None


class Session:
    """JSON-RPC bookkeeping for one connection.

    :param send: writes one message (thread-safe, whole frames), by a deadline.
    :param on_notification: receives every notification, in arrival order.
    :param on_request: receives server→client requests other than ``ping``; the owner
        must answer each with :meth:`respond` or :meth:`respond_error`.
    :param on_progress: receives progress notifications matched to a pending request
        that has a progress callback.
    """

    def __init__(self, send: SendFunction, *, on_notification: NotificationSink | None = None,
                 on_request: RequestSink | None = None, on_progress: ProgressSink | None = None) -> None:
        self._send = send
        self._on_notification = on_notification
        self._on_request = on_request
        self._on_progress = on_progress
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, PendingRequest] = {}
        self._by_token: dict[int | str, PendingRequest] = {}
        self._closed: BaseException | None = None
        #: ``_meta`` entries added to every request (the modern era's per-request protocol
        #: version, client info and capabilities); replaced whole, never mutated.
        self.default_meta: dict[str, Any] | None = None
        #: Replies whose id matched nothing pending (late, unknown, duplicate).
        self.dropped_responses = 0
        #: Messages that were not valid JSON-RPC and matched no request.
        self.invalid_messages = 0
        #: Threads sending detached requests (:meth:`join_senders` waits for them).
        self._senders: set[threading.Thread] = set()

    @property
    def closed(self) -> BaseException | None:
        """The exception that closed this session, or ``None`` while it is open."""
        return self._closed

    def pending_count(self) -> int:
        """How many requests are awaiting a reply."""
        return len(self._pending)

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (a parent thread may have held this one at the fork)."""
        self._lock = threading.Lock()

    # -- sending -------------------------------------------------------------

    def request(self, method: str, params: Mapping[str, Any] | None, deadline: Deadline, *,
                progress: ProgressCallback | None = None, track_progress: bool = False,
                detach: bool = False) -> PendingRequest:
        """Register a request and send it, by *deadline*.

        With *progress* (or *track_progress*) a ``progressToken`` equal to the request
        id is added to ``params._meta``.  With *detach* the message is sent on a
        short-lived thread and this returns at once (``request_async``, a listen
        stream): a transport's send may last as long as the exchange (HTTP).

        :raises ConnectionClosed: when the session is closed or the send fails.
        :raises RequestTimeout: when the transport could not send by *deadline*.
        """
        with self._lock:
            if self._closed is not None:
                raise clone_exception(self._closed)
            request_id = next(self._ids)
            pending = PendingRequest(request_id, method, deadline)
            self._pending[request_id] = pending
            if progress is not None or track_progress:
                pending.progress_token = request_id
                pending.on_progress = progress
                self._by_token[request_id] = pending
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        default_meta = self.default_meta
        if params is not None or pending.progress_token is not None or default_meta:
            body = dict(params or ())
            if pending.progress_token is not None or default_meta:
                meta = dict(default_meta or ())
                meta.update(body.get("_meta") or ())
                if pending.progress_token is not None:
                    meta["progressToken"] = pending.progress_token
                body["_meta"] = meta
            message["params"] = body
        if detach:
            self._send_detached(pending, message)
        else:
            self._send_for(pending, message)
        return pending

    def _send_for(self, pending: PendingRequest, message: dict[str, Any]) -> None:
        depth = getattr(_calls, "depth", 0)
        _calls.depth = depth + 1  # the transport takes its locks now (see in_call)
        try:
            self._send(message, pending.deadline)
        except RequestTimeout as exc:
            # The transport could not finish by the deadline: the caller's timeout.
            self.settle(pending, exc)
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception):  # Ctrl-C: the server may have the request
                self.cancel(pending, "interrupted")
                raise
            if not self.settle(pending, exc) and pending.reply._done:
                return  # settled meanwhile (a reply, a cancel, a close): that is the answer
            raise
        finally:
            _calls.depth = depth

    def _send_detached(self, pending: PendingRequest, message: dict[str, Any]) -> None:
        def send() -> None:
            try:
                self._send_for(pending, message)
            except BaseException as exc:  # noqa: BLE001 - the caller gets it from its reply
                log.debug("detached send of %s failed: %s", pending.method, type(exc).__name__)
            finally:
                self._senders.discard(thread)

        thread = threading.Thread(target=send, name=f"mcpsync-send-{next(_senders)}", daemon=True)
        self._senders.add(thread)
        try:
            thread.start()
        except RuntimeError:  # no new threads (interpreter exiting): send here
            send()

    def join_senders(self, timeout: float) -> None:
        """Wait (at most *timeout* seconds for all) for the threads sending detached requests."""
        end = now() + timeout
        for thread in list(self._senders):
            if thread is not threading.current_thread() and thread.ident is not None:
                thread.join(max(0.0, end - now()))

    def notify(self, method: str, params: Mapping[str, Any] | None = None, deadline: Deadline | None = None) -> None:
        """Send a notification.

        :raises ConnectionClosed: when the session is closed or the send fails.
        """
        if self._closed is not None:
            raise clone_exception(self._closed)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        self._send(message, deadline)

    def respond(self, request_id: int | str, result: Mapping[str, Any]) -> None:
        """Answer a server→client request; a closed connection is ignored."""
        self._send_quietly({"jsonrpc": "2.0", "id": request_id, "result": dict(result)})

    def respond_error(self, request_id: int | str, code: int, message: str, data: Any = None) -> None:
        """Answer a server→client request with an error; a closed connection is ignored."""
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send_quietly({"jsonrpc": "2.0", "id": request_id, "error": error})

    def _send_quietly(self, message: Mapping[str, Any]) -> None:
        if self._closed is not None:
            return
        try:
            self._send(message, None)
        except ConnectionClosed as exc:
            log.debug("could not send %s: %s", message.get("id"), exc)

    # -- waiting, timeouts and cancellation ------------------------------------

    def wait(self, pending: PendingRequest, deadline: Deadline | None = None) -> dict[str, Any]:
        """Block until *pending* settles and return its raw ``result``.

        :param deadline: what to wait by (default: the one it was sent with); progress
            for the request moves its window (reset-on-progress).
        :raises RequestTimeout: after sending ``notifications/cancelled``.
        :raises KeyboardInterrupt: (or what a signal handler raised) after sending
            ``notifications/cancelled`` and dropping the request, as a timeout does.
        """
        reply = pending.reply
        if reply._done:
            return reply.result()
        if deadline is not None:
            pending.deadline = deadline
        else:
            deadline = pending.deadline
        depth = getattr(_calls, "depth", 0)
        _calls.depth = depth + 1
        try:
            while not reply.wait(deadline.remaining()):
                if deadline.passed():  # else progress moved the end while we slept
                    exc = deadline.expired(f"{pending.method!r} got no reply", pending.method)
                    if self._settle_locally(pending, exc, "timeout"):
                        raise exc
            return reply.result()
        except BaseException as exc:
            if not isinstance(exc, Exception):
                # Ctrl-C (or a signal handler's SystemExit) while waiting: the server stops the
                # work, and the entry goes now rather than when a late reply comes.
                self.cancel(pending, "interrupted")
            raise
        finally:
            _calls.depth = depth

    def cancel(self, pending: PendingRequest, reason: str | None = None) -> bool:
        """Cancel *pending*: its caller gets :class:`RequestCancelled`.

        :returns: ``False`` if the request had already settled.
        """
        exc = RequestCancelled(f"{pending.method!r} was cancelled" + (f": {reason}" if reason else ""))
        return self._settle_locally(pending, exc, reason or "cancelled")

    def settle(self, pending: PendingRequest, exc: BaseException) -> bool:
        """Fail *pending* locally without telling the server (it ended the request).

        :returns: ``False`` if the request had already settled.
        """
        if self._pop(pending.id) is None:
            return False
        pending.reply.set_exception(exc)
        return True

    def _settle_locally(self, pending: PendingRequest, exc: BaseException, reason: str) -> bool:
        if not self.settle(pending, exc):
            return False
        if pending.method not in _NEVER_CANCEL and self._closed is None:
            params = {"requestId": pending.id, "reason": reason}
            try:
                # Best effort, and never the caller's wait: a wedged pipe or socket drops it.
                self.notify("notifications/cancelled", params, Deadline(_CANCEL_BOUND))
            except Exception as send_exc:  # a dying connection must not mask the timeout
                log.debug("could not send cancellation for %s: %s", pending.id, send_exc)
        return True

    def _pop(self, request_id: int) -> PendingRequest | None:
        with self._lock:
            pending = self._pending.pop(request_id, None)
            if pending is not None and pending.progress_token is not None:
                self._by_token.pop(pending.progress_token, None)
            return pending

    def fail_all(self, exc: BaseException) -> None:
        """Close the session: every pending call fails with a copy of *exc*.

        Later sends raise a copy of *exc* too.  Idempotent: the first reason wins.
        """
        with self._lock:
            if self._closed is None:
                self._closed = exc
            pending = list(self._pending.values())
            self._pending.clear()
            self._by_token.clear()
        for item in pending:
            item.reply.set_exception(clone_exception(exc))

    # -- receiving -----------------------------------------------------------

    def feed(self, message: Any) -> None:
        """Handle one parsed message from the peer.  Never raises for bad input."""
        if type(message) is dict:
            method = message.get("method")
            if method is None:
                if "id" in message:
                    self._feed_response(message)
                else:
                    self._invalid("neither a request, a notification nor a response", message)
            elif not isinstance(method, str):
                self._invalid("method is not a string", message)
            elif "id" in message:
                self._feed_request(message, method)
            else:
                self._feed_notification(message, method)
        elif isinstance(message, list):
            # Batches were removed in 2025-06-18; resolving what we can beats
            # leaving callers to time out.
            for item in message:
                self.feed(item)
        else:
            self._invalid("not a JSON object", message)

    def _invalid(self, why: str, message: object) -> None:
        self.invalid_messages += 1
        log.warning("ignoring invalid message from server (%s): %s", why, excerpt(message))

    def _feed_response(self, message: dict[str, Any]) -> None:
        raw_id = message.get("id")
        request_id = raw_id if type(raw_id) is int else normalize_id(raw_id)
        pending = self._pop(request_id) if isinstance(request_id, int) else None
        if pending is None:
            if message.get("id") is None and isinstance(message.get("error"), dict):
                # The server could not tell which request failed (e.g. a parse error).
                log.warning("server reported an error for no request: %s", excerpt(message["error"]))
            else:
                log.debug("dropping reply for unknown or settled id %s", excerpt(message.get("id")))
            self.dropped_responses += 1
            return
        try:
            outcome = outcome_of(message)
        except ProtocolError as exc:
            outcome = exc
        except Exception as exc:  # a bug of ours must fail this call, not the reader
            log.exception("could not interpret the reply to %s", pending.method)
            outcome = ProtocolError(f"could not interpret reply: {exc!r}")
        if isinstance(outcome, BaseException):
            pending.reply.set_exception(outcome)
        else:
            pending.reply.set_result(outcome)

    def _feed_notification(self, message: dict[str, Any], method: str) -> None:
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            self._invalid("notification params are not an object", message)
            return
        if method == "notifications/progress":
            token = params.get("progressToken")
            key = normalize_id(token)
            pending = self._by_token.get(key) if key is not None else None
            if pending is not None:
                pending.deadline.progressed()
                if pending.on_progress is not None and self._on_progress is not None:
                    self._on_progress(pending, params)
            else:
                # Progress for a request that already completed is normal.
                log.debug("progress for unknown token %s", excerpt(token))
        if self._on_notification is not None:
            self._on_notification(method, params)

    def _feed_request(self, message: dict[str, Any], method: str) -> None:
        request_id = message.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            self._invalid("request id is not a string or integer", message)
            return
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            self.respond_error(request_id, -32602, "params must be an object")
            return
        if method == "ping":
            self.respond(request_id, {})
        elif self._on_request is None:
            self.respond_error(request_id, -32601, f"method not found: {method}")
        else:
            self._on_request(request_id, method, params)
