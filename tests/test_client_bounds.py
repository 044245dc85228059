"""Bounds of the client's own bookkeeping: the background listen stream by the caller's
deadline, and close() never held by a stuck sender or a hung closer (in-process peers)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import mcpsync
from mcpsync.testing import FakeServer
from mcpsync.transports.base import CloseHandler, MessageHandler, Transport

pytestmark = pytest.mark.timeout(60)

#: A generous bound for "by the call's own 0.5 s", far below the client's 20 s default.
WITHIN = 5.0


class Wrapped(Transport):
    """A fake server's transport that drops, blocks or hangs on chosen methods."""

    def __init__(self, server: FakeServer, *, drop: str = "", block: str = "", hang_close: bool = False) -> None:
        self.inner = server.transport()
        self.drop, self.block, self.hang_close = drop, block, hang_close
        self.release = threading.Event()
        self.blocked = threading.Event()
        self.on_send: Any = None

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        self.inner.start(on_message, on_close)

    def send(self, message: Mapping[str, Any], deadline: Any = None) -> None:
        method = message.get("method")
        if self.on_send is not None and method == "tools/call":
            self.on_send()
        if method == self.drop:
            return  # the server never sees it, so it never acknowledges it
        if method == self.block:
            self.blocked.set()
            self.release.wait(30)  # a send that ignores close() and its deadline
        self.inner.send(message, deadline)

    def close(self) -> None:
        if self.hang_close:
            self.release.wait(30)
        self.inner.close()


def modern_server() -> FakeServer:
    server = FakeServer("fake", "1.0", era="dual")

    @server.resource("demo://note", name="note", mime_type="text/plain")
    def note() -> str:
        return "a note"

    @server.tool()
    def echo(text: str) -> str:
        """Echo."""
        return text

    return server


def test_subscribe_resource_waits_for_the_listen_ack_by_its_own_timeout() -> None:
    transport = Wrapped(modern_server(), drop="subscriptions/listen")
    with mcpsync.Client(transport, timeout=20).connect() as client:
        assert client.era == "modern"
        began = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout):
            client.subscribe_resource("demo://note", timeout=0.5)
        assert time.monotonic() - began < WITHIN


def test_a_call_waiting_behind_another_threads_stream_update_ends_by_its_own_timeout() -> None:
    # Thread A's on() reopens the stream by the client's 20 s default and waits for an ack that
    # never comes; thread B's subscribe_resource(timeout=0.5) must not wait A's 20 s for its turn.
    transport = Wrapped(modern_server(), drop="subscriptions/listen")
    sent = threading.Event()
    dropping = transport.send

    def send(message: Mapping[str, Any], deadline: Any = None) -> None:
        dropping(message, deadline)
        if message.get("method") == "subscriptions/listen":
            sent.set()

    transport.send = send  # type: ignore[method-assign]
    ended: list[BaseException] = []

    def first_on() -> None:
        try:
            client.on("notifications/tools/list_changed", lambda params: None)
        except mcpsync.McpError as exc:  # the close below ends its wait
            ended.append(exc)

    with mcpsync.Client(transport, timeout=20).connect() as client:
        first = threading.Thread(target=first_on, name="test-first-on")
        first.start()
        try:
            assert sent.wait(WITHIN)  # A holds the stream update now, waiting for the ack
            began = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                client.subscribe_resource("demo://note", timeout=0.5)
            assert time.monotonic() - began < WITHIN
        finally:
            client.close()  # ends A's wait too
            first.join(WITHIN)
        assert not first.is_alive()
        assert [type(exc) for exc in ended] == [mcpsync.ClientClosed]


def test_a_lazy_connect_opens_the_background_stream_by_the_calls_deadline(caplog: pytest.LogCaptureFixture) -> None:
    transport = Wrapped(modern_server(), drop="subscriptions/listen")
    client = mcpsync.Client(transport, timeout=20)
    client.on("notifications/tools/list_changed", lambda params: None)
    began = time.monotonic()
    try:
        client.ping(timeout=0.5)  # connects; the unacknowledged stream is best effort
    except mcpsync.RequestTimeout:
        pass  # the ping itself may find its deadline spent by the stream's wait
    finally:
        elapsed = time.monotonic() - began
        client.close()
    assert elapsed < WITHIN
    assert "could not open the notification stream" in caplog.text


def _join_own_threads(before: set[threading.Thread], matches: Any, within: float = 5.0) -> None:
    """Join the threads this test started (not in *before*) whose name *matches*, each by *within*."""
    ours = [t for t in threading.enumerate() if matches(t.name) and t not in before]
    for thread in ours:
        thread.join(within)
    assert not [t for t in ours if t.is_alive()]


def test_close_is_not_held_by_a_stuck_detached_send() -> None:
    before = set(threading.enumerate())
    transport = Wrapped(modern_server(), block="slow/thing")
    client = mcpsync.Client(transport, mode="legacy", timeout=20).connect()
    try:
        client.request_async("slow/thing")
        assert transport.blocked.wait(5)
        began = time.monotonic()
        client.close()
        assert time.monotonic() - began < 1.5  # the old bound was 2 s for the senders alone
    finally:
        transport.release.set()
    _join_own_threads(before, lambda name: name.startswith("mcpsync-send"))


def test_a_later_close_waits_for_a_hung_deferred_close_only_so_long() -> None:
    """A close() started inside a call (a signal handler's) runs on a closer thread; a later
    close() waits for it, but not for ever when the transport's close hangs."""
    before = set(threading.enumerate())
    transport = Wrapped(modern_server(), hang_close=True)
    client = mcpsync.Client(transport, mode="legacy", timeout=20).connect()
    transport.on_send = client.close  # inside the session's send: the deferred path
    try:
        with pytest.raises(mcpsync.ClientClosed):
            client.call_tool("echo", {"text": "x"})
        began = time.monotonic()
        client.close()
        assert time.monotonic() - began < 8  # the hung close lasts 30 s
    finally:
        transport.release.set()
    _join_own_threads(before, lambda name: name == "mcpsync-close")


def test_a_group_of_chosen_servers_reads_its_config_file_once(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "c": {"command": "c"}}}')
    reads: list[str] = []
    read_text = Path.read_text

    def counted(self: Path, *args: Any, **kwargs: Any) -> str:
        if self == path:
            reads.append(str(self))
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    group = mcpsync.ClientGroup.from_config(path, servers=["a", "b"])
    try:
        assert group.servers == ["a", "b"]
        assert len(reads) == 1, reads
    finally:
        group.close()
