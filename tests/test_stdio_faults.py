"""Client-level fault tests over stdio: RELIABILITY.md A1-A10 and B1-B8 (the ★ entries).

Every test runs ``mcpsync.Client.stdio`` against tests/servers/fault_server.py, a
real subprocess; faults are chosen per call through the tool arguments.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers_proc import LivenessListener, assert_no_leaks, child_pids, snapshot

import mcpsync
from mcpsync.exceptions import (
    ClientClosed,
    ConnectionClosed,
    MessageTooLarge,
    ProtocolError,
    RequestCancelled,
    RequestTimeout,
    ServerStartError,
)

FAULT = [sys.executable, str(Path(__file__).resolve().parent / "servers" / "fault_server.py")]
MiB = 1024 * 1024


def client(*extra: str, **options: Any) -> mcpsync.Client:
    options.setdefault("timeout", 10.0)
    return mcpsync.Client.stdio(FAULT, args=list(extra), **options)


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_record(path: Path, pred: Callable[[list[dict[str, Any]]], bool], timeout: float = 5.0) -> list[dict[str, Any]]:
    """Wait until the server's record file satisfies ``pred`` (it is another process)."""
    deadline = time.monotonic() + timeout
    while True:
        entries = records(path)
        if pred(entries):
            return entries
        if time.monotonic() >= deadline:
            raise AssertionError(f"server record never matched; last entries: {entries[-5:]}")
        time.sleep(0.02)


def calls_with(entries: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return [
        e for e in entries
        if e.get("method") == "tools/call" and key in ((e.get("params") or {}).get("arguments") or {})
    ]


def cancels(entries: list[dict[str, Any]]) -> list[Any]:
    return [(e.get("params") or {}).get("requestId") for e in entries if e.get("method") == "notifications/cancelled"]


def dropped(c: mcpsync.Client) -> int:
    """Replies the session dropped (late, unknown, duplicate): a private counter."""
    return int(c._connection().session.dropped_responses)


@pytest.fixture
def leaks() -> Iterator[None]:
    before = snapshot()
    yield
    assert_no_leaks(before)


# ---------------------------------------------------------------- A1 ★ death with calls pending


@pytest.mark.timeout(60)
@pytest.mark.parametrize("tree", [False, True], ids=["plain", "grandchild-holds-stdout"])
def test_pending_calls_fail_when_the_server_dies(tree: bool, tmp_path: Path, leaks: None) -> None:
    record = tmp_path / "rec.jsonl"
    extra = ["--record", str(record)] + (["--spawn-tree"] if tree else [])
    results: list[BaseException | None] = [None] * 20
    finished: list[float] = [0.0] * 20
    with client(*extra, timeout=30.0) as c:

        def worker(i: int) -> None:
            try:
                c.call_tool("echo", {"never": True, "i": i})
            except BaseException as exc:  # noqa: BLE001 - recorded for the assertions
                results[i] = exc
            finished[i] = time.monotonic()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
        for th in threads:
            th.start()
        wait_record(record, lambda es: len(calls_with(es, "never")) == 20)
        start = time.monotonic()
        with pytest.raises(ConnectionClosed) as info:
            c.call_tool("echo", {"exit": 3})
        for th in threads:
            th.join(5)
        assert not any(th.is_alive() for th in threads)
        assert info.value.exit_code == 3
        for exc in results:
            assert isinstance(exc, ConnectionClosed) and not isinstance(exc, ClientClosed), exc
            assert exc.exit_code == 3
        assert max(finished) - start < 2.0
        # later calls fail fast too (or reconnect) — never hang
        later = time.monotonic()
        try:
            c.ping(timeout=5)
        except ConnectionClosed:
            pass
        assert time.monotonic() - later < 2.0


# ---------------------------------------------------------------- B1 ★ start failures


@pytest.mark.timeout(30)
def test_missing_binary(leaks: None) -> None:
    c = mcpsync.Client.stdio("/nonexistent/bin/mcp-server-nope")
    start = time.monotonic()
    with pytest.raises(ServerStartError):
        c.connect()
    assert time.monotonic() - start < 2.0
    c.close()


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("scenario", "code", "stderr"),
    [("exit_immediately", 3, "giving up at once"), ("banner_then_crash", -6, "about to crash")],
)
def test_server_dies_before_handshake(scenario: str, code: int, stderr: str, leaks: None) -> None:
    c = client("--scenario", scenario, "--exit-code", str(code))
    start = time.monotonic()
    with pytest.raises(ServerStartError) as info:
        c.connect()
    assert time.monotonic() - start < 2.0
    assert info.value.exit_code == code
    assert stderr in info.value.stderr_tail and stderr in str(info.value)
    c.close()


# ---------------------------------------------------------------- A3 ★ malformed responses


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "variant", ["message_null", "error_string", "code_string", "code_bool", "code_float", "both", "neither"]
)
def test_malformed_response_fails_only_that_call(variant: str) -> None:
    with client() as c:
        start = time.monotonic()
        with pytest.raises(ProtocolError):
            c.call_tool("echo", {"malformed": variant})
        assert time.monotonic() - start < 1.0
        assert c.call_tool("echo", {"next": 1}).text == '{"next": 1}'


# ---------------------------------------------------------------- A4 ★ id mutations


@pytest.mark.timeout(30)
def test_string_id_is_coerced() -> None:
    with client() as c:
        assert c.call_tool("echo", {"id_mutation": "str"}).text == '{"id_mutation": "str"}'


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["bool", "null", "unknown", "float"])
def test_unmatchable_ids_are_dropped_not_fatal(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    with client() as c:
        c.ping()  # so ids are > 1 and True cannot alias a live request by luck
        before = dropped(c)
        with pytest.raises(RequestTimeout):
            c.call_tool("echo", {"id_mutation": kind}, timeout=0.5)
        assert c.call_tool("echo", {"next": 1}).text == '{"next": 1}'
        assert dropped(c) == before + 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.timeout(30)
def test_duplicate_response_is_dropped() -> None:
    with client() as c:
        before = dropped(c)
        assert c.call_tool("echo", {"id_mutation": "duplicate"}).text == '{"id_mutation": "duplicate"}'
        assert c.call_tool("echo", {"next": 1}).text == '{"next": 1}'  # the duplicate has arrived by now
        assert dropped(c) == before + 1


# ---------------------------------------------------------------- A9 ★ timeouts


@pytest.mark.timeout(30)
def test_never_answering_server_times_out_and_is_told(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    with client("--record", str(record)) as c:
        start = time.monotonic()
        with pytest.raises(RequestTimeout) as info:
            c.call_tool("echo", {"never": True}, timeout=0.5)
        elapsed = time.monotonic() - start
        assert 0.45 <= elapsed < 1.5
        assert isinstance(info.value, TimeoutError) and info.value.method == "tools/call"
        entries = wait_record(record, lambda es: bool(cancels(es)))
        (request,) = calls_with(entries, "never")
        assert cancels(entries) == [request["id"]]
        assert c.call_tool("echo", {"next": 1}).text == '{"next": 1}'


@pytest.mark.timeout(30)
def test_progress_resets_the_timeout() -> None:
    seen: list[float] = []
    all_seen = threading.Event()

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)
        if len(seen) == 5:
            all_seen.set()

    with client() as c:
        result = c.call_tool(
            "echo", {"progress": {"every": 0.3, "count": 5}}, timeout=0.8, progress=on_progress
        )
        assert result.text.startswith('{"progress"')
        # callbacks run on the dispatcher thread, so the last may trail the reply
        assert all_seen.wait(5)
        assert seen == [1, 2, 3, 4, 5]


@pytest.mark.timeout(30)
def test_progress_does_not_reset_when_disabled() -> None:
    with client() as c:
        start = time.monotonic()
        with pytest.raises(RequestTimeout):
            c.call_tool("echo", {"progress": {"every": 0.2, "count": 8}}, timeout=0.7,
                        progress=lambda *a: None, reset_timeout_on_progress=False)
        assert time.monotonic() - start < 1.5


@pytest.mark.timeout(30)
@pytest.mark.parametrize("with_progress", [True, False])
def test_max_total_timeout_is_a_hard_cap(with_progress: bool) -> None:
    args: dict[str, Any] = {"progress": {"every": 0.2, "count": 20}} if with_progress else {"never": True}
    with client() as c:
        start = time.monotonic()
        with pytest.raises(RequestTimeout):
            c.call_tool("echo", args, timeout=0.5, progress=lambda *a: None, max_total_timeout=1.2)
        elapsed = time.monotonic() - start
        assert (1.1 <= elapsed < 2.2) if with_progress else (0.45 <= elapsed < 1.2)


# ---------------------------------------------------------------- A10 ★ cancel races


@pytest.mark.timeout(30)
def test_cancel_races_a_late_reply(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpsync")
    record = tmp_path / "rec.jsonl"
    with client("--record", str(record)) as c:
        before = dropped(c)
        call = c.request_async("tools/call", {"name": "echo", "arguments": {"delay": 0.4}})
        wait_record(record, lambda es: bool(calls_with(es, "delay")))
        canceller = threading.Thread(target=call.cancel)
        canceller.start()
        canceller.join(5)
        with pytest.raises(RequestCancelled):
            call.result(timeout=5)
        assert call.cancel() is False  # already settled
        entries = wait_record(record, lambda es: bool(cancels(es)))
        assert cancels(entries) == [call.id]
        # the server answers anyway; the late reply is dropped quietly
        deadline = time.monotonic() + 5
        while dropped(c) == before and time.monotonic() < deadline:
            c.ping()
        assert dropped(c) == before + 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


# ---------------------------------------------------------------- B2-B4 through the client


@pytest.mark.timeout(60)
def test_stderr_flood_does_not_stall_calls() -> None:
    with client("--scenario", "stderr_flood_nonl") as c:
        for i in range(20):
            assert c.call_tool("echo", {"i": i}).text == json.dumps(
                {"i": i, "nonl": True, "stderr": 256 * 1024}, sort_keys=True
            )


@pytest.mark.timeout(60)
def test_big_reply_then_oversized_reply(leaks: None) -> None:
    c = mcpsync.Client.stdio(FAULT, max_message_bytes=2 * MiB, timeout=20)
    with c:
        assert len(c.call_tool("echo", {"size": MiB}).text) == MiB
        start = time.monotonic()
        with pytest.raises(MessageTooLarge):
            c.call_tool("echo", {"size": 3 * MiB})
        assert time.monotonic() - start < 2.0


@pytest.mark.timeout(30)
def test_junk_and_nesting_on_stdout_are_survived() -> None:
    with client() as c:
        assert c.call_tool("echo", {"junk": True}).text == '{"junk": true}'
        assert c.call_tool("echo", {"nested": True}).text == '{"nested": true}'
        assert c.call_tool("echo", {"dribble": True}).text == '{"dribble": true}'


# ---------------------------------------------------------------- B6 ★ / B8 ★


@pytest.mark.timeout(30)
def test_client_close_kills_the_tree(leaks: None) -> None:
    with LivenessListener() as live:
        c = client("--spawn-tree", "--stay-after-eof", "--ignore-sigterm", "--liveness-port", str(live.port))
        c.connect()
        live.wait_connected(3)
        start = time.monotonic()
        c.close()
        assert live.wait_all_closed(6.0), live.open_roles()
        assert time.monotonic() - start < 8.0
        c.close()


@pytest.mark.timeout(120)
def test_32_threads_of_64k_calls(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    errors: list[BaseException] = []
    with client("--record", str(record), "--strict-lines", timeout=30) as c:
        barrier = threading.Barrier(32)

        def worker(n: int) -> None:
            try:
                barrier.wait()
                for i in range(4):
                    blob = chr(65 + n % 26) * 65536
                    assert json.loads(c.call_tool("echo", {"blob": blob, "n": n, "i": i}).text)["blob"] == blob
            except BaseException as exc:  # noqa: BLE001 - recorded for the assertions
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(32)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(90)
    assert not errors, errors[:3]
    entries = records(record)
    assert all(e["valid"] for e in entries)
    assert sum(1 for e in entries if e.get("method") == "tools/call") == 32 * 4


# ---------------------------------------------------------------- E4 fork


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_child_gets_its_own_server_parent_unaffected() -> None:
    with client() as c:
        assert c.call_tool("echo", {"before": 1}).text == '{"before": 1}'
        parent_server = c._connection().transport.pid  # type: ignore[attr-defined]
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                try:
                    ok = c.call_tool("echo", {"child": 1}, timeout=10).text == '{"child": 1}'
                    code = 0 if ok else 2
                except mcpsync.ForkedClientError:
                    code = 0
                c.close()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert c.call_tool("echo", {"after": 1}).text == '{"after": 1}'
        assert c._connection().transport.pid == parent_server  # type: ignore[attr-defined]
        assert parent_server in child_pids()
