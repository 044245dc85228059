"""Deadlines over HTTP and WebSocket: the cells issue 12 left untested (see docs/reliability.rst).

* C2: ``close()`` ends a connect to an address that drops SYNs (a 127.0.0.1 port whose listen
  backlog is full: Linux drops further SYNs, so ``connect()`` hangs as behind a black hole).
* C9: a JSON body that trickles in and then stalls ends at the call's deadline, not one whole
  read wait later (raw-socket server).
* A9/A10: a slow ``initialize`` over HTTP (the official SDK server behind a delay), the legacy
  HTTP+SSE transport's connect, close and ``request_async`` (the official SDK's SSE server and
  raw-socket servers), and a WebSocket write to a peer that stopped reading.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request, handshake

import mcpsync

pytestmark = pytest.mark.timeout(90)

#: A deadline is met when the caller is back within this many seconds of it.
SLACK = 1.0


@contextlib.contextmanager
def black_hole() -> Iterator[str]:
    """``http://127.0.0.1:PORT``, where a connect hangs: the port's listen backlog is full."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    address = listener.getsockname()
    filler = socket.create_connection(address, timeout=5)  # fills the backlog of one
    probe = socket.socket()
    probe.settimeout(0.3)
    try:
        with contextlib.suppress(TimeoutError):
            probe.connect(address)
            pytest.fail("a full listen backlog does not drop SYNs here: no black hole to test with")
        yield f"http://{address[0]}:{address[1]}/mcp"
    finally:
        probe.close()
        filler.close()
        listener.close()


def _released_by_close(client: mcpsync.Client, call: Any, started: threading.Event | None = None,
                       settle: float = 0.3) -> tuple[BaseException, float]:
    """Run *call* on a thread, close *client* once it is blocked; (its error, seconds close -> return)."""
    outcome: list[BaseException] = []
    returned: list[float] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            outcome.append(exc)
        returned.append(time.monotonic())

    caller = threading.Thread(target=run, name="caller")
    caller.start()
    if started is not None:
        assert started.wait(10)
    else:
        # Nothing observable tells that a connect is under way (the kernel drops the SYNs):
        # give the caller time to get there. Closing earlier must release it all the same.
        caller.join(settle)
    closing = time.monotonic()
    client.close()
    caller.join(10)
    assert not caller.is_alive(), "close() did not release the caller"
    assert outcome, "the call returned although it could not have been answered"
    return outcome[0], returned[0] - closing


# -- C2: close() interrupts a black-holed connect --------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_c2_close_interrupts_a_connect_to_an_address_that_drops_syns(mode: str) -> None:
    with black_hole() as url:
        client = mcpsync.Client.http(url, transport="streamable-http", mode=mode, timeout=30)
        error, after = _released_by_close(client, lambda: client.call_tool("x"))
        assert after < SLACK, f"close() released the connecting caller after {after:.2f} s"
        assert isinstance(error, mcpsync.ClientClosed), repr(error)


def test_c2_a_connect_that_hangs_ends_at_the_call_deadline() -> None:
    with black_hole() as url:
        client = mcpsync.Client.http(url, transport="streamable-http", mode="legacy", timeout=30)
        try:
            start = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                client.call_tool("x", timeout=1.0)
            assert time.monotonic() - start < 1.0 + SLACK
        finally:
            client.close()


# -- C9: a trickling JSON body ends at the deadline -------------------------------------------------


class TricklingJson:
    """tools/call is answered with a JSON body sent 1 byte per 0.3 s, then nothing (never closed)."""

    def __init__(self, trickle: int = 6) -> None:
        self.trickle = trickle

    def __call__(self, request: Request, conn: Conn) -> None:
        if handshake(request, conn):
            return
        body = b'{"jsonrpc": "2.0", "id": %d, "result": {"content": []}}' % request.body["id"]
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        for byte in body[:self.trickle]:
            if conn.server.stopping.wait(0.3):
                return
            conn.send(bytes([byte]))
        conn.hold()


def test_c9_json_body_that_trickles_then_stalls_ends_at_the_call_deadline() -> None:
    with FaultServer(TricklingJson()) as server:
        with mcpsync.Client.http(server.url, transport="streamable-http", mode="legacy", timeout=30) as client:
            client.connect()
            start = time.monotonic()
            with pytest.raises(mcpsync.RequestTimeout):
                # 6 bytes in 1.8 s, then silence: the read after the last byte must end by 2 s.
                client.call_tool("x", timeout=2.0)
            elapsed = time.monotonic() - start
            assert elapsed < 2.0 + SLACK, f"came back after {elapsed:.2f} s"
