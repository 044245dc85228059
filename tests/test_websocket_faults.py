"""Faults of the WebSocket transport: closes, aborts, oversized frames, TLS, stalls, fork.

Most tests use ``tests/servers/ws_bridge.py`` (the official-SDK server behind a real
``websockets`` server) with a fault chosen in the URL's query string; the few faults no real
server produces on request (a peer that stops reading, a frame header announcing 10 GB, an
oversized control frame) use the hand-made peer in ``tests/servers/ws_raw.py``.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ws_harness import Bridge, make_certificates
from ws_raw import RawServer

import mcpsync
from mcpsync.transports.websocket.transport import WebSocketClosed, WebSocketTransport

pytestmark = pytest.mark.timeout(60)

SLOW = {"steps": 100, "delay": 0.1}  # ten seconds: still pending when the fault comes


@pytest.fixture(scope="module")
def bridge() -> Iterator[Bridge]:
    server = Bridge()
    yield server
    server.stop()


def connect(url: str, **options: Any) -> mcpsync.Client:
    options.setdefault("timeout", 20.0)
    options.setdefault("mode", "legacy")
    return mcpsync.Client.websocket(url, **options).connect()


def call_in_thread(client: mcpsync.Client, name: str, args: dict[str, Any]) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(client.call_tool(name, args))
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            outcome.append(exc)

    thread = threading.Thread(target=run, name=f"test-call-{name}")
    thread.start()
    return thread, outcome


def wait_pending(client: mcpsync.Client, count: int, timeout: float = 5.0) -> None:
    """Block until *count* calls are registered on the client's session (sent, awaiting replies)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn = client._conn
        if conn is not None and conn.session.pending_count() >= count:
            return
        time.sleep(0.005)
    raise AssertionError(f"fewer than {count} calls in flight after {timeout} s")


# --------------------------------------------------------------------------- server closes


def test_close_code_fails_pending_call_with_code_and_reason(bridge: Bridge) -> None:
    url = bridge.url(on="slow", action="close", code=1011, reason="backend exploded", forward=1)
    client = connect(url)
    try:
        started = time.monotonic()
        with pytest.raises(WebSocketClosed) as info:
            client.call_tool("slow", SLOW)
        assert time.monotonic() - started < 5.0
        assert info.value.code == 1011
        assert info.value.reason == "backend exploded"
        assert "1011" in str(info.value) and "backend exploded" in str(info.value)
        assert isinstance(info.value, mcpsync.ConnectionClosed)
        # The call that saw the close raised it; the next one runs on a new connection.
        assert client.call_tool("echo", {"text": "after"}).text == "after"
    finally:
        client.close()


def test_abrupt_close_fails_every_pending_call(bridge: Bridge) -> None:
    client = connect(bridge.url(on="add", action="abort"))
    try:
        calls = [call_in_thread(client, "slow", SLOW) for _ in range(3)]
        wait_pending(client, 3)
        started = time.monotonic()
        with pytest.raises(WebSocketClosed) as info:
            client.call_tool("add", {"a": 1, "b": 2})
        assert info.value.code == 1006
        for thread, outcome in calls:
            thread.join(5.0)
            assert not thread.is_alive()
            (exc,) = outcome
            assert isinstance(exc, mcpsync.ConnectionClosed), exc
        assert time.monotonic() - started < 5.0
    finally:
        client.close()


def test_clean_server_close_while_idle_is_reported(bridge: Bridge) -> None:
    url = bridge.url(on="echo", action="close", code=1000, reason="bye")
    client = connect(url)
    try:
        with pytest.raises(WebSocketClosed) as info:
            client.call_tool("echo", {"text": "x"})
        assert (info.value.code, info.value.reason) == (1000, "bye")
    finally:
        client.close()


# --------------------------------------------------------------------------- frames


def test_oversized_frame_closes_with_message_too_large(bridge: Bridge) -> None:
    client = connect(bridge.url(on="echo", action="big", size=2_000_000), max_message_bytes=100_000)
    try:
        with pytest.raises(mcpsync.MessageTooLarge):
            client.call_tool("echo", {"text": "x"})
    finally:
        client.close()


def test_oversized_fragmented_message_closes_with_message_too_large(bridge: Bridge) -> None:
    client = connect(bridge.url(on="echo", action="fragments", size=1_000_000), max_message_bytes=300_000)
    try:
        with pytest.raises(mcpsync.MessageTooLarge):
            client.call_tool("echo", {"text": "x"})
    finally:
        client.close()


def test_fragmented_messages_are_reassembled(bridge: Bridge, recorder: Any) -> None:
    progress = recorder()
    with connect(bridge.url(fragment=7)) as client:
        assert client.call_tool("echo", {"text": "fragmented ü"}).text == "fragmented ü"
        assert client.call_tool("slow", {"steps": 3, "delay": 0}, progress=progress).text == "done after 3 steps"
        assert len(progress.wait(3)) == 3
        assert len(client.list_tools()) >= 13


def test_junk_frames_and_pings_are_skipped(bridge: Bridge) -> None:
    transport = WebSocketTransport(bridge.url(junk=1))
    with mcpsync.Client(transport, mode="legacy", timeout=20.0) as client:
        assert client.call_tool("echo", {"text": "clean"}).text == "clean"
        assert transport.skipped_frames == 2  # the binary frame and the non-JSON text


def test_server_pings_are_answered(bridge: Bridge) -> None:
    # The bridge pings every 50 ms and closes (1011) when a pong is a second late.
    with connect(bridge.url(ping=0.05)) as client:
        assert client.call_tool("slow", {"steps": 15, "delay": 0.1}).text == "done after 15 steps"
        assert client.call_tool("echo", {"text": "alive"}).text == "alive"


def test_frame_header_announcing_10_gb_is_refused_before_reading() -> None:
    def script(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"\x81\x7f" + struct.pack("!Q", 10 * 1024**3))  # and never the payload
        server.read_some(conn)

    server = RawServer(script)
    closed: list[BaseException] = []
    got = threading.Event()
    transport = WebSocketTransport(server.url)
    try:
        transport.start(lambda message: None, lambda exc: (closed.append(exc), got.set()))
        assert got.wait(10.0)
        assert isinstance(closed[0], mcpsync.MessageTooLarge)
    finally:
        transport.close()
        server.stop()
    # The client said why: a close frame with code 1009 (masked, so unmask it to check).
    frame = bytes(server.received)
    assert frame[0] == 0x88
    mask, payload = frame[2:6], frame[6:8]
    assert bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) == struct.pack("!H", 1009)


def test_oversized_control_frame_is_a_protocol_error() -> None:
    def script(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"\x89\x7e" + struct.pack("!H", 200) + b"p" * 200)
        server.read_some(conn)

    server = RawServer(script)
    closed: list[BaseException] = []
    got = threading.Event()
    transport = WebSocketTransport(server.url)
    try:
        transport.start(lambda message: None, lambda exc: (closed.append(exc), got.set()))
        assert got.wait(10.0)
        assert isinstance(closed[0], WebSocketClosed) and closed[0].code == 1002
    finally:
        transport.close()
        server.stop()


def test_server_that_stops_reading_bounds_send() -> None:
    def script(conn: socket.socket, stop: threading.Event) -> None:
        stop.wait(30.0)  # never reads: the socket buffers fill up

    server = RawServer(script)
    transport = WebSocketTransport(server.url, write_timeout=0.5)
    try:
        transport.start(lambda message: None, lambda exc: None)
        big = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "z" * 1_000_000}}
        started = time.monotonic()
        with pytest.raises((mcpsync.RequestTimeout, mcpsync.ConnectionClosed)):
            for _ in range(200):
                transport.send(big)
        assert time.monotonic() - started < 20.0
    finally:
        close_started = time.monotonic()
        transport.close()
        assert time.monotonic() - close_started < 8.0
        server.stop()


# --------------------------------------------------------------------------- handshake failures


def test_subprotocol_is_required(bridge: Bridge) -> None:
    client = mcpsync.Client.websocket(bridge.url(no_subprotocol=1), mode="legacy")
    try:
        with pytest.raises(mcpsync.ServerStartError, match="subprotocol"):
            client.connect()
    finally:
        client.close()
    with connect(bridge.url(no_subprotocol=1), subprotocols=()) as client:
        assert client.call_tool("echo", {"text": "no subprotocol"}).text == "no subprotocol"


def test_connection_refused_is_a_start_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    client = mcpsync.Client.websocket(f"ws://127.0.0.1:{port}/mcp", connect_timeout=5.0)
    try:
        with pytest.raises(mcpsync.ServerStartError):
            client.connect()
    finally:
        client.close()


def test_redirects_are_not_followed(bridge: Bridge) -> None:
    # Following it would carry the Authorization header to another origin.
    client = mcpsync.Client.websocket(
        bridge.url(redirect="ws://127.0.0.2:9/elsewhere"), headers={"Authorization": "Bearer t"}
    )
    try:
        with pytest.raises(mcpsync.ServerStartError, match="redirect"):
            client.connect()
    finally:
        client.close()


@pytest.fixture(scope="module")
def tls_bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Bridge, Path]]:
    ca, cert, key = make_certificates(tmp_path_factory.mktemp("tls"))
    server = Bridge("--certfile", str(cert), "--keyfile", str(key))
    yield server, ca
    server.stop()


def test_tls_is_verified_by_default(tls_bridge: tuple[Bridge, Path]) -> None:
    bridge, ca = tls_bridge
    url = bridge.url(scheme="wss")
    client = mcpsync.Client.websocket(url, mode="legacy")
    try:
        with pytest.raises(mcpsync.ServerStartError, match="certificate"):
            client.connect()
    finally:
        client.close()
    with connect(url, verify=str(ca)) as client:
        assert client.call_tool("echo", {"text": "over TLS"}).text == "over TLS"


# --------------------------------------------------------------------------- lifecycle


def test_close_from_another_thread_fails_pending_call_promptly(bridge: Bridge) -> None:
    client = connect(bridge.url())
    thread, outcome = call_in_thread(client, "slow", SLOW)
    wait_pending(client, 1)
    started = time.monotonic()
    client.close()
    thread.join(5.0)
    assert time.monotonic() - started < 5.0
    (exc,) = outcome
    assert isinstance(exc, mcpsync.ClientClosed)
    client.close()  # idempotent


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_child_opens_its_own_connection(bridge: Bridge) -> None:
    with connect(bridge.url()) as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = 0 if client.call_tool("echo", {"text": "child"}, timeout=15).text == "child" else 2
                client.close()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert client.call_tool("echo", {"text": "parent"}).text == "parent"


def test_send_waits_for_a_stuck_writer_only_as_long_as_its_deadline() -> None:
    """A send with 0.2 s left, queued behind a writer stuck on a peer that stopped reading, gives up by its
    own deadline (it used to wait for the write lock in whole-second steps), and close() still frees both."""
    from mcpsync.rpc.deadline import Deadline

    def script(conn: socket.socket, stop: threading.Event) -> None:
        stop.wait(30.0)  # never reads: the socket buffers fill up

    server = RawServer(script)
    transport = WebSocketTransport(server.url)
    stuck: list[BaseException] = []

    def write_big() -> None:
        big = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "z" * 20_000_000}}
        try:
            transport.send(big, Deadline(20.0))
        except BaseException as exc:
            stuck.append(exc)

    writer = threading.Thread(target=write_big)
    close_took = None
    try:
        try:
            transport.start(lambda message: None, lambda exc: None)
            writer.start()
            # The writer takes the write lock only once the frame is encoded (20 MB takes a moment), then
            # holds it until close() or its 20 s deadline: no peer read ever lets the whole frame out.
            until = time.monotonic() + 10.0
            while not transport._write_lock.locked() and time.monotonic() < until:
                time.sleep(0.01)
            assert writer.is_alive() and transport._write_lock.locked()
            started = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                transport.send({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}, Deadline(0.2))
            waited = time.monotonic() - started
            assert waited < 1.2, f"waited {waited:.2f}s for a send with 0.2s left"
        finally:
            close_started = time.monotonic()
            transport.close()
            if writer.ident is not None:
                writer.join(5.0)
            close_took = time.monotonic() - close_started
    finally:
        server.stop()
    assert not writer.is_alive() and close_took is not None and close_took < 8.0
    assert isinstance(stuck[0], mcpsync.ConnectionClosed)
