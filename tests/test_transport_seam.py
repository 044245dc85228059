"""The transport seam: ``start(on_message, on_close)``, ``send(message, deadline)``, ``close()``, ``forget()``.

Nothing is negotiated and nothing is sniffed: no capability flags, no optional send keywords,
no caller-read hook.  Each transport honours the call's deadline itself; detaching a send
(``request_async``) is the session's business, above the seam.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

import mcpsync
from mcpsync.rpc.deadline import Deadline
from mcpsync.testing import FakeServer
from mcpsync.transports.base import CloseHandler, MessageHandler, Transport
from mcpsync.transports.http import StreamableHTTPTransport
from mcpsync.transports.http.auto import AutoHTTPTransport
from mcpsync.transports.http.legacy import LegacySSETransport
from mcpsync.transports.memory import MemoryTransport
from mcpsync.transports.stdio import StdioTransport
from mcpsync.transports.websocket import WebSocketTransport

pytestmark = pytest.mark.timeout(30)

TRANSPORTS = [StdioTransport, WebSocketTransport, MemoryTransport, StreamableHTTPTransport, LegacySSETransport,
              AutoHTTPTransport]


def make_server() -> FakeServer:
    server = FakeServer("seam", "1.0", era="legacy")
    release = threading.Event()

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def stall() -> str:
        release.wait(10)
        return "late"

    server.release = release  # type: ignore[attr-defined]
    return server


class Minimal(Transport):
    """A user's transport: the four methods, nothing else; records each send and its deadline."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.sent: list[tuple[dict[str, Any], Deadline | None, str]] = []

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        self.inner.start(on_message, on_close)

    def send(self, message: Mapping[str, Any], deadline: Deadline | None = None) -> None:
        self.sent.append((dict(message), deadline, threading.current_thread().name))
        self.inner.send(message, deadline)

    def close(self) -> None:
        self.inner.close()


def test_a_transport_of_four_methods_carries_every_kind_of_call() -> None:
    server = make_server()
    transport = Minimal(server.transport())
    try:
        with mcpsync.Client(transport) as client:
            start = time.monotonic()
            assert client.call_tool("add", {"a": 2, "b": 3}, timeout=5).text == "5"
            # The send got the call's deadline: the one made from its timeout.
            ((_, deadline, _),) = [(m, d, t) for m, d, t in transport.sent if m.get("method") == "tools/call"]
            assert deadline is not None and deadline.end is not None
            assert start + 4.5 < deadline.end < time.monotonic() + 5
            # request_async returns at once: the session sends on a thread of its own.
            pending = client.request_async("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            assert pending.result(timeout=5)["content"][0]["text"] == "2"
            assert transport.sent[-1][2].startswith("mcpsync-send-")
            # A timeout sends notifications/cancelled through the same send, bounded.
            with pytest.raises(mcpsync.RequestTimeout):
                client.call_tool("stall", timeout=0.3)
    finally:
        server.release.set()  # type: ignore[attr-defined]
    cancels = [(m, d) for m, d, _ in transport.sent if m.get("method") == "notifications/cancelled"]
    assert len(cancels) == 1 and cancels[0][0]["params"]["reason"] == "timeout"
    assert cancels[0][1] is not None and cancels[0][1].timeout == pytest.approx(0.1)


@pytest.mark.parametrize("cls", TRANSPORTS, ids=lambda cls: cls.__name__)
def test_each_transport_is_the_seam_and_nothing_more(cls: type[Transport]) -> None:
    for name in ("independent_requests", "bounded_send", "detached_send", "handoff_send", "caller_reader",
                 "send_options"):
        assert not hasattr(cls, name), name
    assert list(inspect.signature(cls.send).parameters) == ["self", "message", "deadline"]
    assert list(inspect.signature(cls.start).parameters) == ["self", "on_message", "on_close"]
