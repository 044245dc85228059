"""StdioTransport against real subprocesses (tests/servers/fault_server.py), no Client.

RELIABILITY.md entries: A1, A2, B1-B8 at the transport level; E4 (fork).
"""

from __future__ import annotations

import io
import json
import logging
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers_proc import (
    LivenessListener,
    assert_no_leaks,
    child_pids,
    process_state,
    snapshot,
)

from mcpsync.rpc.deadline import Deadline
from mcpsync.exceptions import (
    ClientClosed,
    ConnectionClosed,
    ForkedClientError,
    MessageTooLarge,
    RequestTimeout,
    ServerStartError,
)
from mcpsync.transports.stdio.transport import StdioTransport

FAULT = [sys.executable, str(Path(__file__).resolve().parent / "servers" / "fault_server.py")]
MiB = 1024 * 1024


class Peer:
    """A StdioTransport with plain callbacks: a message queue and a close event."""

    def __init__(self, *extra: str, **kw: Any) -> None:
        self.messages: queue.Queue[Any] = queue.Queue()
        self.closes: list[BaseException] = []
        self.closed = threading.Event()
        self.closed_at = 0.0
        self.t = StdioTransport(FAULT + list(extra), **kw)
        self._next = 0

    def start(self) -> Peer:
        self.t.start(self.messages.put, self._on_close)
        return self

    def _on_close(self, exc: BaseException) -> None:
        self.closed_at = time.monotonic()
        self.closes.append(exc)
        self.closed.set()

    def request(self, args: dict[str, Any] | None = None, method: str = "tools/call") -> int:
        self._next += 1
        params: dict[str, Any] = {"name": "echo", "arguments": args or {}}
        self.t.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return self._next

    def response(self, rid: int, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            msg = self.messages.get(timeout=max(deadline - time.monotonic(), 0.001))
            if isinstance(msg, dict) and msg.get("id") == rid:
                return msg

    def call(self, args: dict[str, Any] | None = None, timeout: float = 10.0) -> str:
        msg = self.response(self.request(args), timeout)
        return str(msg["result"]["content"][0]["text"])

    def wait_closed(self, timeout: float = 5.0) -> BaseException:
        assert self.closed.wait(timeout), "on_close was not called"
        return self.closes[0]

    def __enter__(self) -> Peer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.t.close()


@pytest.fixture
def leaks() -> Iterator[None]:
    before = snapshot()
    yield
    assert_no_leaks(before)


# ---------------------------------------------------------------- B1 spawn / early exit


def test_missing_binary_raises_server_start_error(leaks: None) -> None:
    t = StdioTransport("/nonexistent/mcp-server-xyz", ["--token", "s3cret"])
    with pytest.raises(ServerStartError) as info:
        t.start(lambda m: None, lambda e: None)
    assert isinstance(info.value.__cause__, FileNotFoundError)
    assert "mcp-server-xyz" in str(info.value) and "s3cret" not in str(info.value)
    t.close()  # still fine afterwards


def test_bad_cwd_raises_server_start_error(leaks: None) -> None:
    t = StdioTransport(FAULT, cwd="/nonexistent-dir-for-mcpsync")
    with pytest.raises(ServerStartError):
        t.start(lambda m: None, lambda e: None)


@pytest.mark.timeout(20)
def test_server_exiting_at_once_reports_exit_code_and_stderr(leaks: None) -> None:
    start = time.monotonic()
    with Peer("--scenario", "exit_immediately", "--exit-code", "3") as p:
        exc = p.wait_closed(2.0)
        assert p.closed_at - start < 2.0
    assert isinstance(exc, ServerStartError)  # exited before sending anything
    assert exc.exit_code == 3
    assert "giving up at once" in exc.stderr_tail
    assert p.closes == [exc]


@pytest.mark.timeout(20)
def test_banner_then_crash(leaks: None) -> None:
    with Peer("--scenario", "banner_then_crash") as p:
        exc = p.wait_closed(2.0)
    assert isinstance(exc, ConnectionClosed)
    assert exc.exit_code == -signal.SIGABRT
    assert "about to crash" in exc.stderr_tail
    assert p.t.skipped_lines == 1  # the stdout banner


# ---------------------------------------------------------------- B2 stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nonl", [False, True], ids=["lines", "no-newlines"])
def test_stderr_flood_is_drained(nonl: bool, leaks: None) -> None:
    with Peer() as p:
        for i in range(50):
            assert p.call({"stderr": 256 * 1024, "nonl": nonl, "i": i}, timeout=10) == json.dumps(
                {"i": i, "nonl": nonl, "stderr": 256 * 1024}, sort_keys=True
            )
        tail = p.t.stderr_tail
        assert tail and len(tail) <= 8192


def _stderr_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if "stderr" in t.name and t.is_alive())


def _wait_for(check: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.timeout(60)
def test_connections_share_one_stderr_thread_that_ends_with_the_last(leaks: None) -> None:
    # Issue 18: an idle connection costs its reader thread only.
    peers = [Peer().start() for _ in range(5)]
    try:
        for i, p in enumerate(peers):
            assert p.call({"stderr": 300, "i": i}) == json.dumps({"i": i, "stderr": 300}, sort_keys=True)
        assert _stderr_threads() == ["mcpsync-stderr"]
        for p in peers:  # each connection keeps its own head and tail
            assert _wait_for(lambda p=p: "x" * 99 in p.t.stderr_tail)
    finally:
        for p in peers:
            p.t.close()
    assert _wait_for(lambda: _stderr_threads() == [])


@pytest.mark.timeout(60)
def test_a_server_flooding_stderr_does_not_stall_another_connections_drain(leaks: None) -> None:
    with Peer() as flood, Peer() as quiet:
        errors: list[BaseException] = []

        def flooding() -> None:
            try:
                for i in range(20):
                    flood.call({"stderr": 256 * 1024, "nonl": True, "i": i}, timeout=20)
            except BaseException as exc:  # reported below
                errors.append(exc)

        thread = threading.Thread(target=flooding)
        thread.start()
        for i in range(20):  # 200 KiB of stderr each: more than a pipe holds, so it must be drained
            assert quiet.call({"stderr": 200 * 1024, "i": i}, timeout=20)
        thread.join(30)
        assert not thread.is_alive() and not errors
        assert len(quiet.t.stderr_tail) <= 8192


@pytest.mark.timeout(30)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_drains_stderr_on_its_own_thread() -> None:
    with Peer() as p:
        assert p.call({"stderr": 300}) and _stderr_threads() == ["mcpsync-stderr"]
        pid = os.fork()
        if pid == 0:  # child: never returns into pytest
            code = 1
            try:
                with Peer() as q:  # the parent's shared thread does not exist here
                    for i in range(5):
                        q.call({"stderr": 200 * 1024, "i": i}, timeout=10)
                    code = 0 if _stderr_threads() == ["mcpsync-stderr"] and "x" * 99 in q.t.stderr_tail else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert p.call({"after": 1}) == '{"after": 1}'


def test_stderr_to_callable_and_file(leaks: None) -> None:
    lines: list[str] = []
    with Peer(stderr=lines.append) as p:
        p.call({"stderr": 1000})
        p.t.close()
    assert len(lines) == 10 and all(line == "x" * 99 for line in lines)
    with tempfile.TemporaryFile() as f:
        with Peer(stderr=f) as p:
            p.call({"stderr": 1000, "nonl": True})
            p.t.close()
        f.seek(0)
        assert f.read() == b"y" * 1000


def test_stderr_logged_to_mcpsync_server(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpsync.server")
    with Peer() as p:
        p.call({"stderr": 300})
        p.t.close()
    server_lines = [r for r in caplog.records if r.name == "mcpsync.server"]
    assert len(server_lines) == 3 and "x" * 99 in server_lines[0].getMessage()


# ---------------------------------------------------------------- B3 sizes


@pytest.mark.timeout(60)
@pytest.mark.parametrize("size", [65 * 1024, MiB, 12 * MiB], ids=["65KiB", "1MiB", "12MiB"])
def test_large_replies(size: int) -> None:
    with Peer() as p:
        assert len(p.call({"size": size}, timeout=30)) == size
        assert p.call({"after": True}) == '{"after": true}'


@pytest.mark.timeout(20)
def test_cap_plus_one_fails_fast_after_earlier_messages(leaks: None) -> None:
    cap = 100_000
    with Peer("--sizes", f"1000,{cap},{cap + 1}", max_message_bytes=cap) as p:
        exc = p.wait_closed(5.0)
        assert isinstance(exc, MessageTooLarge) and str(cap) in str(exc)
        got = [len(json.dumps(m, separators=(",", ":"))) for m in list(p.messages.queue)]
        assert got == [1000, cap]
        with pytest.raises(MessageTooLarge):
            p.request()
        pid = p.t.pid
        p.t.close()
        assert p.t.returncode is not None and pid not in child_pids()  # reaped


@pytest.mark.timeout(60)
def test_unterminated_100mib_flood_stays_bounded(leaks: None) -> None:
    cap = MiB
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        with Peer("--scenario", "no_newline_flood", "--size", str(100 * MiB), max_message_bytes=cap) as p:
            exc = p.wait_closed(10.0)
            p.t.close()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(exc, MessageTooLarge)
    assert peak < 4 * cap, f"peak traced memory {peak} bytes with a {cap}-byte cap"


# ---------------------------------------------------------------- B4 junk, A2 nesting


def test_junk_lines_skipped_with_counter_and_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcpsync.transports.stdio")
    with Peer() as p:
        assert p.call({"junk": True}) == '{"junk": true}'  # the reply itself ends in \r\n
        assert p.t.skipped_lines == 3  # npm warn, \xff\xfe, {not json}; blank lines are not junk
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("npm warn" in w for w in warnings)
        for _ in range(5):
            p.call({"junk": True})
        assert p.t.skipped_lines == 18
        warnings = [r for r in caplog.records if r.name.startswith("mcpsync.transports.stdio.")]
        assert len(warnings) <= 6  # rate-limited: a burst, then one "suppressed" note


def test_deeply_nested_line_does_not_kill_the_reader() -> None:
    with Peer() as p:
        assert p.call({"nested": True}) == '{"nested": true}'
        assert p.t.skipped_lines == 1
        assert p.call({"after": 1}) == '{"after": 1}'
        assert not p.closed.is_set()


def test_on_message_exception_does_not_kill_the_reader(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Any] = []

    def explode(msg: Any) -> None:
        seen.append(msg)
        if len(seen) == 1:
            raise RuntimeError("callback bug")

    closes: list[BaseException] = []
    t = StdioTransport(FAULT)
    t.start(explode, closes.append)
    try:
        t.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        t.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        deadline = time.monotonic() + 5
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [m["id"] for m in seen] == [1, 2] and not closes
        assert any("callback bug" in (r.exc_text or "") or r.exc_info for r in caplog.records)
    finally:
        t.close()


# ---------------------------------------------------------------- B5 framing


def test_dribbled_packed_and_unterminated_replies() -> None:
    with Peer() as p:
        assert p.call({"dribble": True}) == '{"dribble": true}'
        rid = p.request({"pack": 3})
        notes = [p.messages.get(timeout=5) for _ in range(2)]
        assert all(n["method"] == "notifications/message" for n in notes)
        assert p.response(rid)["id"] == rid
        last = p.request({"final_no_newline": True})
        assert p.response(last)["id"] == last
        exc = p.wait_closed()
        assert isinstance(exc, ConnectionClosed) and exc.exit_code == 0


# ---------------------------------------------------------------- B6 shutdown


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "extra",
    [[], ["--ignore-sigterm", "--stay-after-eof"], ["--stay-after-eof"]],
    ids=["exits-on-eof", "ignores-sigterm", "needs-sigterm"],
)
def test_close_stops_the_whole_tree(extra: list[str], leaks: None, tmp_path: Path) -> None:
    log = tmp_path / "signals"
    with LivenessListener() as live:
        args = ["--spawn-tree", "--liveness-port", str(live.port), "--signal-log", str(log), *extra]
        p = Peer(*args, close_grace=0.5, terminate_grace=0.5).start()
        live.wait_connected(3)
        pid = p.t.pid
        start = time.monotonic()
        p.t.close()
        assert live.wait_all_closed(6.0), live.open_roles()
        assert time.monotonic() - start < 6.0
    assert pid not in child_pids() and process_state(pid or -1) is None  # reaped, no zombie
    assert isinstance(p.wait_closed(0), ClientClosed)
    server_signals = log.read_text().split() if log.exists() else []
    if extra == []:
        assert server_signals == []  # exited on EOF: never signalled
        assert "TERM" not in p.t.signals_sent and "TERM-group" in p.t.signals_sent
    else:
        assert server_signals == ["TERM"]
        assert p.t.signals_sent[0] == "TERM"
        assert ("KILL" in p.t.signals_sent) == ("--ignore-sigterm" in extra)


def test_server_exiting_on_eof_is_never_signalled(leaks: None, tmp_path: Path) -> None:
    log = tmp_path / "signals"
    with Peer("--signal-log", str(log)) as p:
        p.call()
    assert p.t.signals_sent == [] and not log.exists()
    assert p.t.returncode == 0


@pytest.mark.timeout(30)
def test_two_clients_same_argv_close_one_only(leaks: None) -> None:
    with LivenessListener() as live:
        argv = ["--liveness-port", str(live.port)]
        with Peer(*argv) as a, Peer(*argv) as b:
            live.wait_connected(2)
            a.t.close()
            deadline = time.monotonic() + 5
            while len(live.closed) < 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert live.open_roles() == [f"server {b.t.pid}"]
            assert b.call({"still": "here"}) == '{"still": "here"}'


@pytest.mark.timeout(30)
def test_close_is_idempotent_and_concurrent(leaks: None) -> None:
    p = Peer().start()
    threads = [threading.Thread(target=p.t.close) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    p.t.close()
    assert len(p.closes) == 1 and isinstance(p.closes[0], ClientClosed)
    with pytest.raises(ClientClosed):
        p.request()


@pytest.mark.timeout(30)
def test_close_from_on_close_callback_is_prompt(leaks: None) -> None:
    holder: list[StdioTransport] = []
    done = threading.Event()

    def on_close(exc: BaseException) -> None:
        holder[0].close()  # what a client does when the server dies
        done.set()

    t = StdioTransport(FAULT, ["--scenario", "exit_immediately"])
    holder.append(t)
    t.start(lambda m: None, on_close)
    assert done.wait(3.0)
    t.close()


# ---------------------------------------------------------------- B7 wedged writes


@pytest.mark.timeout(30)
def test_close_completes_while_a_write_is_wedged(leaks: None) -> None:
    p = Peer("--scenario", "no_read", close_grace=0.5, terminate_grace=0.5).start()
    errors: list[BaseException] = []

    def big_send() -> None:
        try:
            p.request({"blob": "b" * (10 * MiB)})
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            errors.append(exc)

    writer = threading.Thread(target=big_send)
    writer.start()
    writer.join(0.5)
    assert writer.is_alive()  # wedged: nobody reads the pipe
    start = time.monotonic()
    p.t.close()
    assert time.monotonic() - start < 6.0
    writer.join(5)
    assert len(errors) == 1 and isinstance(errors[0], ClientClosed)


@pytest.mark.timeout(30)
def test_write_timeout_mid_message_closes_the_connection(leaks: None) -> None:
    with Peer("--scenario", "no_read", close_grace=0.5, terminate_grace=0.5) as p:
        start = time.monotonic()
        # The caller's story is its timeout (issue 12); the cut frame closes the connection.
        with pytest.raises(RequestTimeout) as info:
            p.t.send({"jsonrpc": "2.0", "method": "x", "params": {"blob": "b" * (10 * MiB)}}, Deadline(0.5))
        assert 0.4 < time.monotonic() - start < 3.0
        assert "cut short" in str(info.value)
        exc = p.wait_closed(1.0)
        assert "stopped reading" in str(exc)
        assert exc.outcome_unknown  # type: ignore[attr-defined]


@pytest.mark.timeout(30)
def test_write_timeout_before_writing_keeps_the_connection(leaks: None) -> None:
    with Peer("--scenario", "no_read", close_grace=0.5, terminate_grace=0.5, write_timeout=None) as p:
        errors: list[BaseException] = []

        def big_send() -> None:
            try:
                p.request({"blob": "b" * MiB})
            except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
                errors.append(exc)

        wedged = threading.Thread(target=big_send)
        wedged.start()
        wedged.join(0.3)
        assert wedged.is_alive()  # holds the write lock, pipe full
        with pytest.raises(RequestTimeout):
            p.t.send({"jsonrpc": "2.0", "method": "ping", "id": 99}, Deadline(0.3))
        assert not p.closed.is_set()  # nothing was torn: the connection lives on
        p.t.close()
        wedged.join(5)
        assert not wedged.is_alive()
        assert len(errors) == 1 and isinstance(errors[0], ClientClosed)


@pytest.mark.timeout(60)
def test_stdout_is_not_closed_under_a_caller_reading_it(leaks: None) -> None:
    # A caller reading its own reply (caller_read.py) holds the read baton while it reads the
    # pipe.  The reader thread used to close stdout after 1 s whether or not it got the baton:
    # the fd number is then free for reuse, and that caller would read another file.
    inside, leave = threading.Event(), threading.Event()
    replies: queue.Queue[Any] = queue.Queue()
    errors: list[BaseException] = []

    def on_message(message: Any) -> None:
        if threading.current_thread() is caller:  # its own reply, read on its own thread
            inside.set()
            leave.wait(20)  # holds the baton, as a caller in os.read does
        replies.put(message.get("id"))

    def calls() -> None:
        try:
            for i in range(1, 2000):  # back to back: the reader lingers and a caller reads
                t.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo"}}, Deadline(5))
                if inside.is_set():
                    return
                while replies.get(timeout=5) != i:
                    pass
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            errors.append(exc)

    t = StdioTransport(FAULT, close_grace=0.5, terminate_grace=0.5)
    t.start(on_message, lambda exc: None)
    stdout = t._proc.stdout  # type: ignore[union-attr]
    assert stdout is not None
    caller = threading.Thread(target=calls)
    caller.start()
    try:
        assert inside.wait(30), "no reply was ever read on the caller's thread"
        t.close()  # the reader thread ends meanwhile
        assert not stdout.closed
    finally:
        leave.set()
        caller.join(10)
        t.close()
        stdout.close()
    assert not caller.is_alive() and not errors


# ---------------------------------------------------------------- B8 concurrent writes


@pytest.mark.timeout(60)
def test_concurrent_large_frames_are_never_interleaved(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    with Peer("--record", str(record), "--strict-lines") as p:
        barrier = threading.Barrier(32)

        def writer(n: int) -> None:
            barrier.wait()
            for i in range(8):
                p.t.send({"jsonrpc": "2.0", "method": "notifications/test",
                          "params": {"n": n, "i": i, "blob": chr(65 + n % 26) * 65536}})

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(32)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert p.response(p.request(method="ping"), 20)["result"] == {}
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(entries) == 32 * 8 + 1
    assert all(e["valid"] for e in entries)


# ---------------------------------------------------------------- A1 death detection


@pytest.mark.timeout(20)
def test_server_death_reported_once_with_exit_code(leaks: None) -> None:
    with Peer() as p:
        assert p.call({"ok": 1}) == '{"ok": 1}'
        start = time.monotonic()
        p.request({"exit": 3})
        exc = p.wait_closed(2.0)
        assert p.closed_at - start < 2.0
        assert type(exc) is ConnectionClosed and exc.exit_code == 3
        with pytest.raises(ConnectionClosed) as info:
            p.request()
        assert info.value.exit_code == 3 and not isinstance(info.value, ClientClosed)
    assert len(p.closes) == 1


@pytest.mark.timeout(30)
def test_death_detected_while_grandchild_holds_stdout(leaks: None) -> None:
    with LivenessListener() as live:
        with Peer("--spawn-tree", "--liveness-port", str(live.port)) as p:
            live.wait_connected(3)
            start = time.monotonic()
            p.request({"exit": 3})
            exc = p.wait_closed(2.0)
            assert p.closed_at - start < 2.0 and exc.exit_code == 3  # type: ignore[attr-defined]
            # the leftover child and grandchild were killed with the group
            assert live.wait_all_closed(6.0), live.open_roles()


# ---------------------------------------------------------------- environment, describe


def test_environment_is_an_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPSYNC_CANARY_SECRET", "canary-123")
    with Peer(env={"MCPSYNC_EXPLICIT": "yes"}) as p:
        assert p.call({"getenv": "MCPSYNC_CANARY_SECRET"}) == "null"
        assert p.call({"getenv": "MCPSYNC_EXPLICIT"}) == '"yes"'
        assert p.call({"getenv": "PATH"}) == json.dumps(os.environ["PATH"])
        assert p.t.describe() == "stdio:" + os.path.basename(sys.executable)


def test_send_rejects_bad_json_without_writing(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    with Peer("--record", str(record)) as p:
        with pytest.raises(ValueError):
            p.t.send({"jsonrpc": "2.0", "method": "x", "params": {"v": float("nan")}})
        p.call()
    assert len(record.read_text().splitlines()) == 1


# ---------------------------------------------------------------- E4 fork


@pytest.mark.timeout(30)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_cannot_use_the_parents_pipes() -> None:
    with Peer() as p:
        assert p.call({"before": 1}) == '{"before": 1}'
        pid = os.fork()
        if pid == 0:  # child: never returns into pytest
            code = 1
            try:
                try:
                    p.t.send({"jsonrpc": "2.0", "id": 99, "method": "ping"})
                except ForkedClientError:
                    p.t.close()  # must not signal the parent's server
                    code = 0 if p.t.closed else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert p.call({"after": 1}) == '{"after": 1}'
        assert p.t.signals_sent == [] and not p.closed.is_set()


@pytest.mark.timeout(30)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forgetful_forked_child_does_not_keep_the_server_alive(leaks: None, tmp_path: Path) -> None:
    """A live child that forgot the connection holds no copy of the server's stdin."""
    signals = tmp_path / "signals"
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    with LivenessListener() as live:
        p = Peer("--liveness-port", str(live.port), "--signal-log", str(signals), close_grace=4.0).start()
        assert p.call({"before": 1}) == '{"before": 1}'
        live.wait_connected(1)
        pid = os.fork()
        if pid == 0:  # child: never returns into pytest
            code = 1
            try:
                os.close(ready_r)
                os.close(done_w)
                p.t.forget()
                code = 0 if p.t.closed else 2
                os.write(ready_w, b"x")
                select.select([done_r], [], [], 20.0)  # stay alive while the parent closes
            finally:
                os._exit(code)
        os.close(ready_w)
        os.close(done_r)
        try:
            assert select.select([ready_r], [], [], 10.0)[0], "the child did not get ready"
            start = time.monotonic()
            p.t.close()  # closing stdin must be enough: the server exits on EOF
            assert live.wait_all_closed(5.0), live.open_roles()
            assert time.monotonic() - start < 3.0  # not after close_grace and a signal
            assert p.t.signals_sent == [] and not signals.exists()
            assert p.t.returncode == 0
        finally:
            os.write(done_w, b"x")
            _, status = os.waitpid(pid, 0)
            os.close(ready_r)
            os.close(done_w)
        assert os.waitstatus_to_exitcode(status) == 0


def test_subprocess_fault_server_runs_standalone() -> None:
    """The fault server itself answers without mcpsync (guards the fixture)."""
    out = subprocess.run(
        FAULT, input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', capture_output=True, timeout=20, check=True
    )
    assert json.loads(out.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert io.BytesIO(out.stderr).read() == b""
