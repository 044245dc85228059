"""The outcome of one request: :class:`Reply`, a light one-shot future, and the
helpers that turn a response message into an outcome (id matching, validation).

Used by :mod:`mcpsync.rpc.session` for every pending request; nothing here does
I/O or starts a thread.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from typing import Any

from mcpsync.exceptions import ProtocolError, error_from_response, excerpt

__all__ = ["Reply", "clone_exception", "normalize_id", "outcome_of"]

log = logging.getLogger(__name__)

#: Guards :meth:`Reply.add_done_callback` against a concurrent settle (rare path).
_CALLBACKS_LOCK = threading.Lock()


class Reply:
    """The outcome of one request: a one-shot, much lighter ``concurrent.futures.Future``.

    A call's cost is a few microseconds, and a ``Future`` (a ``Condition``
    over an ``RLock``, a fresh lock per waiter, four lock round trips to
    settle and read it) was a large share of it.  Here one plain lock, taken
    at creation, is the event: settling releases it, and each waiter takes
    it and gives it straight back, so any number of threads may wait.
    :meth:`done` is a plain attribute read.

    It is settled at most once, by whoever popped its request from the
    session's pending map (see :class:`Session`); a second settle raises
    :class:`RuntimeError`.
    """

    __slots__ = ("_callbacks", "_done", "_exc", "_gate", "_result")

    def __init__(self) -> None:
        self._gate = threading.Lock()
        self._gate.acquire()
        self._done = False
        self._result: dict[str, Any] | None = None
        self._exc: BaseException | None = None
        self._callbacks: list[Callable[[Reply], object]] | None = None

    def done(self) -> bool:
        """Whether the reply (or the failure) is in."""
        return self._done

    def wait(self, timeout: float | None = None) -> bool:
        """Block until settled or ``timeout`` seconds passed; return :meth:`done`."""
        if self._done:
            return True
        if timeout is None:
            got = self._gate.acquire()
        elif timeout <= 0:
            got = self._gate.acquire(False)
        else:
            got = self._gate.acquire(True, timeout)
        if got:
            self._gate.release()  # the next waiter passes too
        return self._done

    def result(self, timeout: float | None = None) -> dict[str, Any]:
        """The result, once settled; raises the failure instead if there was one.

        :raises TimeoutError: if it did not settle within ``timeout`` seconds.
        """
        if not self._done and not self.wait(timeout):
            raise TimeoutError("the reply did not arrive in time")
        if self._exc is not None:
            raise self._exc
        assert self._result is not None
        return self._result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The failure (``None`` for a result), once settled.

        :raises TimeoutError: if it did not settle within ``timeout`` seconds.
        """
        if not self._done and not self.wait(timeout):
            raise TimeoutError("the reply did not arrive in time")
        return self._exc

    def add_done_callback(self, fn: Callable[[Reply], object]) -> None:
        """Call ``fn(self)`` once settled: at once if it is, else in the settling thread."""
        with _CALLBACKS_LOCK:
            if not self._done:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(fn)
                return
        fn(self)

    def set_result(self, result: dict[str, Any]) -> None:
        """Settle with ``result`` (only by whoever popped the request)."""
        self._settle(result, None)

    def set_exception(self, exc: BaseException) -> None:
        """Settle with the failure ``exc`` (only by whoever popped the request)."""
        self._settle(None, exc)

    def _settle(self, result: dict[str, Any] | None, exc: BaseException | None) -> None:
        if self._done:
            raise RuntimeError("a reply is settled only once")
        self._result, self._exc = result, exc
        self._done = True  # a callback added from now on runs at once
        callbacks = None
        # An adder checks _done and appends under the lock: once _done is set, either its
        # append is visible here, or it holds the lock now (wait for it), or it will see _done.
        if self._callbacks is not None or _CALLBACKS_LOCK.locked():
            with _CALLBACKS_LOCK:
                callbacks, self._callbacks = self._callbacks, None
        self._gate.release()
        for fn in callbacks or ():
            try:
                fn(self)
            except Exception:
                log.exception("a reply callback raised")


def normalize_id(raw: object) -> int | str | None:
    """Return the id a reply refers to, or ``None`` when it cannot match ours.

    We only ever issue integer ids.  Servers that echo ``"7"`` for ``7`` are
    common, so a string of digits is taken as that integer; ``True`` would alias
    id 1 in a dict and a float or ``null`` is never ours.
    """
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str):
        if raw.isascii() and raw.isdigit() and len(raw) < 20:
            return int(raw)
        return raw
    return None


def outcome_of(message: dict[str, Any]) -> dict[str, Any] | BaseException:
    """Validate a JSON-RPC response: its result, or the error it carries as an exception.

    :raises ~mcpsync.exceptions.ProtocolError: if the response is malformed.
    """
    has_result = "result" in message
    has_error = "error" in message
    if message.get("jsonrpc") != "2.0":
        raise ProtocolError(f"malformed response (jsonrpc is not '2.0'): {excerpt(message)}")
    if has_result == has_error:
        raise ProtocolError(f"malformed response (needs exactly one of result/error): {excerpt(message)}")
    if has_error:
        error = message["error"]
        if (
            not isinstance(error, dict)
            or not isinstance(error.get("code"), int)
            or isinstance(error.get("code"), bool)
            or not isinstance(error.get("message"), str)
        ):
            raise ProtocolError(f"malformed error response: {excerpt(message)}")
        return error_from_response(error)
    result = message["result"]
    if not isinstance(result, dict):
        raise ProtocolError(f"malformed response (result is not an object): {excerpt(message)}")
    return result


def clone_exception(exc: BaseException) -> BaseException:
    """A fresh copy of *exc* per waiter: threads must not share one traceback."""
    try:
        dup = copy.copy(exc)
    except Exception:  # an exotic exception type; sharing beats losing it
        return exc
    dup.__cause__ = exc.__cause__
    dup.__traceback__ = None
    return dup
