"""Streams that can never resume (issue 23 item 2; RELIABILITY C3/C4), against a raw-socket server.

The server answers a ``tools/call`` POST with ``text/event-stream``, sends an event with an id
and ``retry``, and ends the stream without the reply.  Every GET is answered 200 and ended at
once.  The call must fail soon with ``ConnectionClosed(outcome_unknown=True)`` after a few
resumptions spaced by ``retry``, keeping the ``Last-Event-ID`` cursor; the listening GET stream
must give up too, bounded and spaced by its ``retry``.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from http_fault import Conn, FaultServer, Request, handshake

import mcpsync
from mcpsync.exceptions import ConnectionClosed, RequestTimeout

pytestmark = pytest.mark.timeout(60)

#: The POST stream's ``retry`` (ms) and the listening stream's.
POST_RETRY = 100
GET_RETRY = 200


class NeverResumes:
    """The hostile server; ``progress`` resumptions deliver a new event id (and a message) first."""

    def __init__(self, progress: int = 0, forever: bool = False) -> None:
        self.progress = progress
        self.forever = forever
        self.lock = threading.Lock()
        self.resumes: list[Request] = []
        self.listens: list[Request] = []

    def __call__(self, request: Request, conn: Conn) -> None:
        if request.method == "GET":
            resuming = "last-event-id" in request.headers
            with self.lock:
                (self.resumes if resuming else self.listens).append(request)
                n = len(self.resumes)
            conn.start_sse()
            if not resuming:
                conn.event(f"retry: {GET_RETRY}\n\n")
            elif self.forever or n <= self.progress:
                note = {"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": f"step {n}"}}
                conn.event(f"id: p{n + 1}\ndata: {json.dumps(note)}\n\n")
            conn.end()
        elif request.rpc_method == "tools/call":
            conn.start_sse()
            conn.event(f"id: p1\nretry: {POST_RETRY}\ndata:\n\n")
            conn.end()
        elif request.rpc_method == "ping":
            conn.respond(200, {"jsonrpc": "2.0", "id": request.body["id"], "result": {}})
        else:
            handshake(request, conn)

    def gaps(self) -> list[float]:
        with self.lock:
            times = [r.time for r in self.resumes]
        return [b - a for a, b in zip(times, times[1:])]


def _client(url: str, **kw: Any) -> mcpsync.Client:
    return mcpsync.Client.http(url, transport="streamable-http", timeout=30, **kw)


def test_a_stream_that_never_resumes_fails_the_call_after_a_few_spaced_attempts() -> None:
    server_logic = NeverResumes()
    with FaultServer(server_logic) as server, _client(server.url) as c:
        c.connect()
        start = time.monotonic()
        with pytest.raises(ConnectionClosed) as info:
            c.call_tool("write", {})  # not safe to repeat: no retry hides what the stream did
        elapsed = time.monotonic() - start
        assert info.value.outcome_unknown
        assert "gave up after 3 reconnects" in str(info.value)
        # Three resumptions, each after the server's retry (100 ms), then the call failed
        # at once: nowhere near its 30 s timeout.
        assert len(server_logic.resumes) == 3
        assert all(r.headers["last-event-id"] == "p1" for r in server_logic.resumes)
        assert all(gap >= POST_RETRY / 1000 for gap in server_logic.gaps())
        assert elapsed < 10
        assert len(server.rpc("tools/call")) == 1


def test_the_listening_stream_gives_up_bounded_and_spaced_by_its_retry() -> None:
    server_logic = NeverResumes()
    with FaultServer(server_logic) as server, _client(server.url) as c:
        c.connect()
        stop = time.monotonic() + 20
        while any(t.name.startswith("mcpsync-http-get") for t in threading.enumerate()):
            assert time.monotonic() < stop, f"still reconnecting after {len(server_logic.listens)} GETs"
            time.sleep(0.05)
        listens = [r.time for r in server_logic.listens]
        # The first GET and three reconnects without progress, each at least retry (200 ms) apart.
        assert len(listens) == 4
        assert all(b - a >= GET_RETRY / 1000 for a, b in zip(listens, listens[1:]))
        c.ping()  # the client itself is fine without the stream
        assert len(server_logic.listens) == 4


def test_a_resumption_with_new_events_moves_the_cursor_and_restarts_the_count() -> None:
    server_logic = NeverResumes(progress=2)
    with FaultServer(server_logic) as server, _client(server.url) as c:
        with pytest.raises(ConnectionClosed) as info:
            c.call_tool("write", {})
        assert info.value.outcome_unknown
        cursors = [r.headers["last-event-id"] for r in server_logic.resumes]
        # Two resumptions brought a new event each (p2, p3): each restarted the count, so three
        # more without progress came after them, all from the latest cursor.
        assert cursors == ["p1", "p2", "p3", "p3", "p3"]


def test_resumption_stops_once_the_caller_gave_up() -> None:
    server_logic = NeverResumes(forever=True)  # every resumption makes progress: no budget ends it
    with FaultServer(server_logic) as server, _client(server.url) as c:
        with pytest.raises(RequestTimeout):
            c.call_tool("write", {}, timeout=1.0)
        time.sleep(0.3)  # a resumption already under way may finish
        seen = len(server_logic.resumes)
        time.sleep(1.0)  # ten retry periods
        assert len(server_logic.resumes) == seen


def test_a_resumed_stream_in_the_fragment_dialect_fails_at_once_as_a_protocol_error() -> None:
    """The dialect check covers a resumed stream too: no more resumptions of a stream we cannot read."""
    gets: list[Request] = []

    def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET":
            if "last-event-id" not in request.headers:
                conn.respond(405, b"", ctype="text/plain")  # no listening stream
                return
            gets.append(request)
            conn.start_sse()
            conn.event("id: p2\nevent: result\ndata: {\"partial\": 1}\n\nevent: complete\ndata:\n\n")
            conn.end()
        elif request.rpc_method == "tools/call":
            conn.start_sse()
            conn.event(f"id: p1\nretry: {POST_RETRY}\ndata:\n\n")
            conn.end()
        else:
            handshake(request, conn)

    with FaultServer(handler) as server, _client(server.url) as c:
        c.connect()
        with pytest.raises(mcpsync.ProtocolError, match="non-standard SSE"):
            c.call_tool("write", {})
    assert len(gets) == 1  # failed at the first resumption, not after the reconnect budget
