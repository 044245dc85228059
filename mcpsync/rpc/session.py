"""The JSON-RPC engine: ids, pending replies and demultiplexing, with no I/O.

:class:`Session` knows nothing about pipes, sockets or threads.  It sends
through a ``send`` callable and receives through :meth:`Session.feed`, which a
transport's reader thread calls with every parsed message.  The rules it keeps
(see docs/threading.rst):

* a request's :class:`Reply` is registered under :attr:`Session._lock` *before* the
  message is written, so a reply can never beat its registration;
* a reply is settled only by whoever pops its id from the pending map under
  that lock (the reader on a reply, the caller on timeout or cancel,
  :meth:`Session.fail_all` on close), so nothing is settled twice and a reply
  for a popped id is dropped;
* the lock is never held while sending or while waiting.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from functools import partial
from collections.abc import Callable, Mapping
from typing import Any

from mcpsync.rpc.reply import Reply, clone_exception, normalize_id, outcome_of
from mcpsync.exceptions import (
    ConnectionClosed,
    ProtocolError,
    RequestCancelled,
    RequestTimeout,
    excerpt,
)

__all__ = ["PendingRequest", "Reply", "Session", "in_call", "normalize_id"]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[float, "float | None", "str | None"], None]
#: Sends one whole message; raises a TransportError when it cannot.  It may take
#: the keywords named in :attr:`Session.send_options`.
SendFunction = Callable[..., None]
#: ``(method, params)`` for every notification from the server.
NotificationSink = Callable[[str, dict[str, Any]], None]
#: ``(request_id, method, params)`` for every server→client request but ``ping``.
RequestSink = Callable[["int | str", str, dict[str, Any]], None]
#: ``read_for(done, timeout, pending)``: read replies in the calling thread until
#: ``done()``; ``pending()`` is how many replies are awaited.
CallerReader = Callable[[Callable[[], bool], "float | None", Callable[[], int]], None]
#: ``(pending, params)`` for a progress notification matched to a pending request.
ProgressSink = Callable[["PendingRequest", dict[str, Any]], None]

_NEVER_CANCEL = frozenset({"initialize"})
#: How many sends and waits of any session this thread is inside (see :func:`in_call`).
_calls = threading.local()


def in_call() -> bool:
    """Whether this thread is inside a send or a wait of a :class:`Session`.

    A signal handler runs on the main thread between two bytecodes of whatever it
    interrupted, which may hold a session, transport or reply lock.  Code that
    such a handler may call (``Client.close()``) asks this first, and then only
    starts its work on another thread instead of waiting for a lock that the
    interrupted frame holds and cannot release until the handler returns.
    """
    return getattr(_calls, "depth", 0) > 0


#: Seconds a cancellation may wait for the transport's write (it is best effort).
_CANCEL_WRITE_BOUND = 0.1


class PendingRequest:
    """A request sent and not yet answered; settled exactly once."""

    __slots__ = (
        "cancel_sent",
        "id",
        "last_activity",
        "method",
        "on_progress",
        "progress_token",
        "reply",
        "started",
    )

    def __init__(self, request_id: int, method: str, started: float) -> None:
        self.id = request_id
        self.method = method
        #: The outcome, settled once (see :class:`~mcpsync.rpc.reply.Reply`).
        self.reply = Reply()
        self.started = started
        #: Moves forward on every progress notification (reset-on-progress).
        self.last_activity = started
        self.progress_token: int | str | None = None
        self.on_progress: ProgressCallback | None = None
        self.cancel_sent = False


class Session:
    """JSON-RPC bookkeeping for one connection.

    :param send: writes one message (thread-safe, whole frames).
    :param on_notification: receives every notification, in arrival order.
    :param on_request: receives server→client requests other than ``ping``;
        the owner must answer each with :meth:`respond` or :meth:`respond_error`.
    :param on_progress: receives progress notifications matched to a pending
        request that has a progress callback.
    """

    def __init__(
        self,
        send: SendFunction,
        *,
        on_notification: NotificationSink | None = None,
        on_request: RequestSink | None = None,
        on_progress: ProgressSink | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send = send
        self._on_notification = on_notification
        self._on_request = on_request
        self._on_progress = on_progress
        self._clock = clock
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, PendingRequest] = {}
        self._by_token: dict[int | str, PendingRequest] = {}
        self._closed: BaseException | None = None
        #: The keywords of ``send`` the transport takes (``deadline``, ``detach``, ``on_write_error``;
        #: see :class:`~mcpsync.transports.base.Transport`); set by the owner.
        self.send_options: frozenset[str] = frozenset()
        #: Set by a transport that lets a caller waiting for the only pending
        #: reply read it itself (no thread switch); see ``StdioTransport.read_for``.
        self.caller_reader: CallerReader | None = None
        #: ``_meta`` entries added to every request (the modern era's per-request
        #: protocol version, client info and capabilities); replaced whole, never mutated.
        self.default_meta: dict[str, Any] | None = None
        #: Replies whose id matched nothing pending (late, unknown, duplicate).
        self.dropped_responses = 0
        #: Messages that were not valid JSON-RPC and matched no request.
        self.invalid_messages = 0

    # -- sending -------------------------------------------------------------

    @property
    def closed(self) -> BaseException | None:
        """The exception that closed this session, or ``None`` while it is open."""
        return self._closed

    def pending_count(self) -> int:
        """How many requests are awaiting a reply."""
        with self._lock:
            return len(self._pending)

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (a parent thread may have held this one at the fork)."""
        self._lock = threading.Lock()

    def send_request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        track_progress: bool = False,
        started: float | None = None,
        deadline: float | None = None,
        detach: bool = False,
    ) -> PendingRequest:
        """Register a request and send it.

        With *on_progress* (or *track_progress*) a ``progressToken`` equal to
        the request id is added to ``params._meta``.

        :param started: when the call began (its timeout counts from there;
            default: now).
        :param deadline: passed to a transport that takes it: the write (and,
            on HTTP, the whole exchange) must be done by then.
        :param detach: ask the transport not to wait for the reply in this
            thread (``request_async``).
        :raises ConnectionClosed: when the session is closed or the send fails.
        :raises RequestTimeout: when the transport could not send by *deadline*.
        """
        with self._lock:
            if self._closed is not None:
                raise clone_exception(self._closed)
            request_id = next(self._ids)
            pending = PendingRequest(request_id, method, self._clock() if started is None else started)
            self._pending[request_id] = pending
            if on_progress is not None or track_progress:
                pending.progress_token = request_id
                pending.on_progress = on_progress
                self._by_token[request_id] = pending
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        default_meta = self.default_meta
        if params is not None or pending.progress_token is not None or default_meta:
            body = dict(params or {})
            if pending.progress_token is not None or default_meta:
                meta = dict(default_meta or ())
                meta.update(body.get("_meta") or ())
                if pending.progress_token is not None:
                    meta["progressToken"] = pending.progress_token
                body["_meta"] = meta
            message["params"] = body
        options = self.send_options
        if detach and "deadline" in options and "detach" not in options:
            # A transport whose writes can block (a full pipe, a slow socket) but that
            # cannot detach itself: write on a short-lived thread, so the caller returns now.
            self._send_detached(pending, message)
            return pending
        depth = getattr(_calls, "depth", 0)
        _calls.depth = depth + 1  # the transport takes its locks now (see in_call)
        try:
            if options:
                kwargs: dict[str, Any] = {}
                if deadline is not None and "deadline" in options:
                    kwargs["deadline"] = deadline
                if detach and "detach" in options:
                    kwargs["detach"] = True
                if "on_write_error" in options:
                    # The transport may hand the message to the thread writing now and
                    # return; a failed write then settles the reply this caller waits on.
                    kwargs["on_write_error"] = partial(self.settle, pending)
                self._send(message, **kwargs)
            else:
                self._send(message)
        except RequestTimeout as exc:
            # The transport could not finish by the deadline (and, where the server got
            # the request, cancelled it): the caller's timeout, whoever settled first.
            self.settle(pending, exc)
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception):  # Ctrl-C: the server may have the request
                self.cancel(pending, "interrupted")
                raise
            if self.settle(pending, exc):
                raise
            if pending.reply._done:
                return pending  # settled meanwhile (cancelled, closed): its outcome is the answer
            raise
        finally:
            _calls.depth = depth
        return pending

    def _send_detached(self, pending: PendingRequest, message: dict[str, Any]) -> None:
        def write() -> None:
            try:
                self._send(message)
            except BaseException as exc:  # the request's caller gets it from its reply
                self.settle(pending, exc)

        try:
            threading.Thread(target=write, name=f"mcpsync-send-{pending.id}", daemon=True).start()
        except RuntimeError:  # no new threads (interpreter exiting): write here
            write()

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification.

        :raises ConnectionClosed: when the session is closed or the send fails.
        """
        if self._closed is not None:
            raise clone_exception(self._closed)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        self._send(message)

    def respond(self, request_id: int | str, result: Mapping[str, Any]) -> None:
        """Answer a server→client request; a closed connection is ignored."""
        self._send_quietly({"jsonrpc": "2.0", "id": request_id, "result": dict(result)})

    def respond_error(
        self, request_id: int | str, code: int, message: str, data: Any = None
    ) -> None:
        """Answer a server→client request with an error; a closed connection is ignored."""
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send_quietly({"jsonrpc": "2.0", "id": request_id, "error": error})

    def _send_quietly(self, message: Mapping[str, Any]) -> None:
        if self._closed is not None:
            return
        try:
            self._send(message)
        except ConnectionClosed as exc:
            log.debug("could not send %s: %s", message.get("id"), exc)

    # -- waiting, timeouts and cancellation ------------------------------------

    def wait(
        self,
        pending: PendingRequest,
        *,
        timeout: float | None,
        reset_on_progress: bool = True,
        max_total: float | None = None,
    ) -> dict[str, Any]:
        """Block until *pending* settles and return its raw ``result``.

        :param timeout: seconds without a reply (and, with *reset_on_progress*,
            without progress) before giving up; ``None`` waits forever.
        :param max_total: a hard cap measured from when the request was sent,
            enforced whether or not progress arrives.
        :raises RequestTimeout: after sending ``notifications/cancelled``.
        :raises KeyboardInterrupt: (or what a signal handler raised) after sending
            ``notifications/cancelled`` and dropping the request, as a timeout does.
        """
        depth = getattr(_calls, "depth", 0)
        _calls.depth = depth + 1
        try:
            return self._wait(pending, timeout, reset_on_progress, max_total)
        except BaseException as exc:
            if not isinstance(exc, Exception):
                # Ctrl-C (or a signal handler's SystemExit) while waiting: the server stops the
                # work, and the entry goes now rather than when a late reply comes.
                self.cancel(pending, "interrupted")
            raise
        finally:
            _calls.depth = depth

    def _wait(
        self, pending: PendingRequest, timeout: float | None, reset_on_progress: bool, max_total: float | None
    ) -> dict[str, Any]:
        reply = pending.reply
        reader = self.caller_reader
        while True:
            if reply._done:
                return reply.result()
            deadline: float | None = None
            if timeout is not None:
                base = pending.last_activity if reset_on_progress else pending.started
                deadline = base + timeout
            if max_total is not None:
                cap = pending.started + max_total
                deadline = cap if deadline is None else min(deadline, cap)
            remaining = None if deadline is None else max(0.0, deadline - self._clock())
            if reader is not None:
                reader_now, reader = reader, None  # once per wait: it hands back when idle
                reader_now(reply.done, remaining, self._pending.__len__)
                continue  # time passed: recompute the deadline
            if reply.wait(remaining):
                return reply.result()
            # Progress may have moved the deadline while we slept.
            now = self._clock()
            idle_expired = timeout is not None and (
                (pending.last_activity if reset_on_progress else pending.started) + timeout <= now
            )
            total_expired = max_total is not None and pending.started + max_total <= now
            if not (idle_expired or total_expired):
                continue
            elapsed = now - pending.started
            exc = RequestTimeout(
                f"{pending.method!r} got no reply within "
                f"{elapsed:.3g}s" + (" (max total)" if total_expired and not idle_expired else ""),
                method=pending.method,
                elapsed=elapsed,
            )
            if self._settle_locally(pending, exc, "timeout"):
                raise exc
            # The reply won the race: it is the answer.
            return pending.reply.result()

    def cancel(self, pending: PendingRequest, reason: str | None = None) -> bool:
        """Cancel *pending*: its caller gets :class:`RequestCancelled`.

        :returns: ``False`` if the request had already settled.
        """
        exc = RequestCancelled(f"{pending.method!r} was cancelled" + (f": {reason}" if reason else ""))
        return self._settle_locally(pending, exc, reason or "cancelled")

    def fail_request(self, request_id: int | str, exc: BaseException) -> None:
        """Fail one pending request by id (a transport lost its reply); no-op if settled."""
        key = normalize_id(request_id)
        pending = self._pop(key) if isinstance(key, int) else None
        if pending is not None:
            pending.reply.set_exception(exc)

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
            pending.cancel_sent = True
            params = {"requestId": pending.id, "reason": reason}
            try:
                if "deadline" in self.send_options:
                    # Best effort, and never the caller's wait: a wedged pipe or socket drops it.
                    self._send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params},
                               deadline=self._clock() + _CANCEL_WRITE_BOUND)
                else:
                    self.notify("notifications/cancelled", params)
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
        if type(message) is dict and "method" not in message and "id" in message:
            self._feed_response(message)  # the common case first
            return
        if isinstance(message, list):
            # Batches were removed in 2025-06-18; resolving what we can beats
            # leaving callers to time out.
            for item in message:
                self.feed(item)
            return
        if not isinstance(message, dict):
            self._invalid("not a JSON object", message)
            return
        method = message.get("method")
        if method is not None:
            if not isinstance(method, str):
                self._invalid("method is not a string", message)
            elif "id" in message:
                self._feed_request(message, method)
            else:
                self._feed_notification(message, method)
            return
        if "id" in message:
            self._feed_response(message)
        else:
            self._invalid("neither a request, a notification nor a response", message)

    def _invalid(self, why: str, message: object) -> None:
        self.invalid_messages += 1
        log.warning("ignoring invalid message from server (%s): %s", why, excerpt(message))

    def _feed_response(self, message: dict[str, Any]) -> None:
        raw_id = message.get("id")
        if type(raw_id) is int and message.get("jsonrpc") == "2.0" and "error" not in message:
            # The usual reply (our integer id, a result object), settled here: the one
            # reader thread does this for every caller, and each frame less is throughput
            # for all of them.  Anything else takes the checks below.
            result = message.get("result")
            if type(result) is dict:
                with self._lock:
                    pending = self._pending.pop(raw_id, None)
                    if pending is not None and pending.progress_token is not None:
                        self._by_token.pop(pending.progress_token, None)
                if pending is not None:
                    pending.reply._settle(result, None)
                    return
                # Unknown or settled id: the general path below counts and logs it.
        request_id = normalize_id(raw_id)
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
            pending.reply.set_exception(exc)
            return
        except Exception as exc:  # a bug of ours must fail this call, not the reader
            log.exception("could not interpret the reply to %s", pending.method)
            pending.reply.set_exception(ProtocolError(f"could not interpret reply: {exc!r}"))
            return
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
            with self._lock:
                pending = self._by_token.get(key) if key is not None else None
                if pending is not None:
                    pending.last_activity = self._clock()
            if pending is not None:
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
            return
        if self._on_request is None:
            self.respond_error(request_id, -32601, f"method not found: {method}")
            return
        self._on_request(request_id, method, params)
