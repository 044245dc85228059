"""Fork safety of :class:`mcpsync.shared.SharedClient` (gunicorn ``--preload``, uWSGI).

A client created and used before ``os.fork()``: the child works with its own
server process, and the parent is unaffected.  A SharedClient never used
before the fork starts nothing in the parent.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import pytest

import mcpsync
from mcpsync.shared import SharedClient
from mcpsync.testing import FakeServer

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    pytest.mark.timeout(60),
]


def demo() -> mcpsync.Client:
    return mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"], timeout=30)


def _in_child(body: object) -> str:
    """Run *body()* in a forked child; its returned text (or the exception's repr) comes back."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            outcome = str(body())  # type: ignore[operator]
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which asserts on it
            outcome = repr(exc)
        os.write(write_fd, outcome.encode())
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as reader:
        outcome_bytes = reader.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return outcome_bytes.decode()


def _pid(shared: SharedClient) -> int:
    return int(shared.get()._conn.transport.pid)  # type: ignore[union-attr,attr-defined]


def test_used_before_fork_child_gets_its_own_server_parent_unaffected() -> None:
    shared = SharedClient(demo)
    try:
        assert shared.call_tool("add", {"a": 1, "b": 1}).text == "2"
        parent_server = _pid(shared)

        def child() -> str:
            text = shared.call_tool("add", {"a": 2, "b": 3}).text
            mine = _pid(shared)
            shared.close()
            return f"{text}:{mine != parent_server}:{shared.generation}"

        assert _in_child(child) == "5:True:1"
        assert shared.call_tool("add", {"a": 1, "b": 2}).text == "3"  # parent unaffected
        assert _pid(shared) == parent_server and shared.generation == 1
    finally:
        shared.close()


def test_fork_while_another_thread_holds_the_lock() -> None:
    """A lock held by a parent thread at fork time must not deadlock the child."""
    shared = SharedClient(demo)
    entered = threading.Event()
    with shared._lock:  # as if another thread were making the client right now
        entered.set()

        def child() -> str:
            return shared.call_tool("echo", {"text": "ok"}).text

        outcome = _in_child(child)
    assert entered.is_set() and outcome == "ok"
    shared.close()


def test_never_used_before_fork_starts_nothing_in_the_parent() -> None:
    made: list[int] = []

    def factory() -> mcpsync.Client:
        made.append(os.getpid())
        return demo()

    shared = SharedClient(factory)  # e.g. at import in a gunicorn --preload master

    def child() -> str:
        text = shared.call_tool("add", {"a": 4, "b": 4}).text
        shared.close()
        return text

    assert _in_child(child) == "8"
    assert made == []  # the factory ran only in the child
    shared.close()


def test_plain_transport_client_is_replaced_in_the_child() -> None:
    """Client(transport) cannot reconnect by itself; the SharedClient's factory makes a new one."""
    server = FakeServer("forked")

    @server.tool()
    def where() -> int:
        return 1

    shared = SharedClient(lambda: server.client(timeout=10))
    try:
        assert shared.call_tool("where").text == "1"

        def child() -> str:
            return shared.call_tool("where").text

        # In the child the old in-process client is dropped, not used: a new one is made.
        assert _in_child(child) == "1"
        assert shared.call_tool("where").text == "1"
    finally:
        shared.close()


def test_closed_shared_client_raises_client_closed() -> None:
    shared = SharedClient(demo)
    shared.close()
    with pytest.raises(mcpsync.ClientClosed):
        shared.list_tools()


def test_a_client_whose_connect_lock_a_parent_thread_held_at_fork_connects_in_the_child() -> None:
    """The lock a connecting parent thread holds is never released in the child: it gets fresh ones."""
    client = demo()
    try:
        client._life.connect_lock.acquire()  # as if another thread were connecting right now
        try:

            def child() -> str:
                signal.alarm(30)  # a child stuck on the parent's lock must not outlive the test
                return client.call_tool("echo", {"text": "ok"}, timeout=10).text

            outcome = _in_child(child)
        finally:
            client._life.connect_lock.release()
        assert outcome == "ok"
        assert client._conn is None  # the parent never connected
    finally:
        client.close()
