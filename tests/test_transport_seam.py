"""The transport seam: the connection uses exactly what a transport declares, nothing sniffed.

:class:`~mcpsync.transports.base.Transport` declares every hook the connection uses
(``on_request_error``, the ``deadline``/``detach`` keywords of ``send``, the caller-read
fast path).  A transport written against the first, smaller form of the ABC keeps working.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

import mcpsync
from mcpsync.exceptions import ConnectionClosed
from mcpsync.testing import FakeServer
from mcpsync.transports.base import (
    CallerReader,
    CloseHandler,
    MessageHandler,
    RequestErrorHandler,
    Transport,
)
from mcpsync.transports.http import StreamableHTTPTransport
from mcpsync.transports.http.auto import AutoHTTPTransport
from mcpsync.transports.http.legacy import LegacySSETransport
from mcpsync.transports.memory import MemoryTransport
from mcpsync.transports.stdio import StdioTransport
from mcpsync.transports.websocket import WebSocketTransport

pytestmark = pytest.mark.timeout(30)


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


class OldStyle(Transport):
    """A user's transport as the first ABC asked for it: two callbacks, ``send(message)``."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.sent: list[dict[str, Any]] = []

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:  # type: ignore[override]
        self.inner.start(on_message, on_close)

    def send(self, message: Mapping[str, Any]) -> None:  # type: ignore[override]
        self.sent.append(dict(message))
        self.inner.send(message)

    def close(self) -> None:
        self.inner.close()


def test_a_transport_written_against_the_old_abc_keeps_working() -> None:
    server = make_server()
    transport = OldStyle(server.transport())
    try:
        with mcpsync.Client(transport) as client:
            assert client.call_tool("add", {"a": 2, "b": 3}, timeout=5).text == "5"
            # request_async: the transport cannot detach, the session returns at once anyway.
            pending = client.request_async("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            assert pending.result(timeout=5)["content"][0]["text"] == "2"
            # A timeout sends notifications/cancelled through the plain send(message).
            with pytest.raises(mcpsync.RequestTimeout):
                client.call_tool("stall", timeout=0.3)
    finally:
        server.release.set()  # type: ignore[attr-defined]
    cancels = [m for m in transport.sent if m.get("method") == "notifications/cancelled"]
    assert len(cancels) == 1 and cancels[0]["params"]["reason"] == "timeout"


class Declaring(Transport):
    """Declares every hook; records how the connection used each of them."""

    independent_requests = True
    bounded_send = True
    detached_send = True

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.on_request_error: RequestErrorHandler | None = None
        self.keywords: list[tuple[str | None, dict[str, Any]]] = []
        self.reads = 0
        self.fail_next: str | None = None

    def start(self, on_message: MessageHandler, on_close: CloseHandler,
              on_request_error: RequestErrorHandler | None = None, *, deadline: float | None = None) -> None:
        self.on_request_error = on_request_error
        self.start_deadline = deadline
        self.inner.start(on_message, on_close)

    def send(self, message: Mapping[str, Any], *, deadline: float | None = None, detach: bool = False) -> None:
        self.keywords.append((message.get("method"), {"deadline": deadline, "detach": detach}))
        if detach and message.get("method") == self.fail_next and self.on_request_error is not None:
            # What HTTP does when a detached POST fails: only that request fails.
            request_id = message["id"]
            threading.Thread(target=self.on_request_error,
                             args=(request_id, ConnectionClosed("reply stream lost"))).start()
            return
        self.inner.send(message)

    def close(self) -> None:
        self.inner.close()

    def caller_reader(self) -> CallerReader:
        def read(done: Any, timeout: float | None, pending: Any) -> None:
            self.reads += 1  # reads nothing: the reader thread delivers, as when it hands back

        return read


def test_the_connection_uses_every_declared_hook() -> None:
    server = make_server()
    transport = Declaring(server.transport())
    with mcpsync.Client(transport) as client:
        assert client.call_tool("add", {"a": 2, "b": 3}, timeout=5).text == "5"
        assert transport.start_deadline is not None  # the connect deadline, as start() declares
        assert transport.reads >= 1  # the caller-read hook was offered the wait
        calls = [kw for method, kw in transport.keywords if method == "tools/call"]
        assert calls[-1]["deadline"] is not None and calls[-1]["detach"] is False
        transport.fail_next = "tools/call"
        pending = client.request_async("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        assert transport.keywords[-1][1]["detach"] is True
        with pytest.raises(ConnectionClosed, match="reply stream lost"):
            pending.result(timeout=5)
        transport.fail_next = None
        assert client.call_tool("add", {"a": 1, "b": 1}, timeout=5).text == "2"  # the connection lives on


@pytest.mark.parametrize(
    ("cls", "independent", "bounded", "detached"),
    [
        (StdioTransport, False, True, False),
        (WebSocketTransport, False, True, False),
        (MemoryTransport, False, False, False),
        (StreamableHTTPTransport, True, True, True),
        (LegacySSETransport, True, True, True),
        (AutoHTTPTransport, True, True, True),
    ],
)
def test_each_transport_declares_what_it_does(
    cls: type[Transport], independent: bool, bounded: bool, detached: bool
) -> None:
    assert (cls.independent_requests, cls.bounded_send, cls.detached_send) == (independent, bounded, detached)


def test_only_stdio_offers_the_caller_read_fast_path() -> None:
    stdio = StdioTransport(["python", "-c", "pass"])
    assert stdio.caller_reader() is not None  # not started: nothing spawned
    assert StreamableHTTPTransport("http://127.0.0.1:1/mcp").caller_reader() is None
    assert make_server().transport().caller_reader() is None
