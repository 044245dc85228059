"""One client shared by many threads, against real stdio servers: every reply reaches its caller.

The heavy test runs 32 threads × 500 calls against ``tests/servers/stdlib_echo_server.py``, a
standard-library server that writes the replies to requests which arrived together in a shuffled
order (the official SDK server is too slow for 16 000 calls in this time budget). Each call echoes
a payload unique to its thread and call, so a reply delivered to the wrong caller is caught.
A lighter run does the same against the official SDK server.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import mcpsync
from mcpsync import types

THREADS = 32
CALLS = 500
#: Every so often a payload is larger than the pipe's atomic-write size (4 KiB), so a client
#: that did not write each frame whole under a lock would interleave frames on stdin.
BIG_EVERY = 50
BIG = "x" * 10_000

ECHO_SERVER = Path(__file__).resolve().parent / "servers" / "stdlib_echo_server.py"


def run_threads(
    client: mcpsync.Client,
    threads: int,
    calls: int,
    extra: Callable[[mcpsync.Client, int], None] | None = None,
) -> None:
    """Run ``threads`` workers × ``calls`` echo calls on one client; assert every reply is the caller's."""
    start = threading.Barrier(threads)
    failures: list[str] = []
    done = [0] * threads

    def worker(index: int) -> None:
        try:
            start.wait(timeout=30)
            for call in range(calls):
                payload = f"thread-{index}-call-{call}"
                if call % BIG_EVERY == 0:
                    payload += BIG
                result = client.call_tool("echo", {"text": payload})
                if result.text != payload:
                    failures.append(f"thread {index} call {call} got {result.text[:60]!r}")
                    return
                if extra is not None and call % 100 == 0:
                    extra(client, call)
                done[index] += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(f"thread {index}: {exc!r}")

    workers = [
        threading.Thread(target=worker, args=(i,), name=f"test-worker-{i}", daemon=True)
        for i in range(threads)
    ]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in workers), "a worker thread hung"
    assert failures == []
    assert sum(done) == threads * calls


def mixed_requests(client: mcpsync.Client, call: int) -> None:
    """Other request types interleaved with the echo calls, each checked for its own shape."""
    client.ping()
    assert next(tool.name for tool in client.list_tools()) == "echo"


@pytest.mark.timeout(120)
def test_many_threads_share_one_client() -> None:
    client = mcpsync.Client.stdio(sys.executable, args=[str(ECHO_SERVER), "--seed", "7"], timeout=60.0)
    with client:
        run_threads(client, THREADS, CALLS, extra=mixed_requests)
        # The connection is intact afterwards.
        assert client.call_tool("echo", {"text": "after"}).text == "after"


@pytest.mark.timeout(120)
def test_many_threads_against_the_sdk_server(sdk_server: list[str]) -> None:
    client = mcpsync.Client.stdio(sdk_server[0], args=sdk_server[1:], mode="legacy", timeout=60.0)
    with client:
        run_threads(client, 16, 40)


@pytest.mark.timeout(120)
def test_concurrent_server_to_client_requests(sdk_server: list[str]) -> None:
    # Sampling requests from the server, in flight for many callers at once, are answered by the
    # handler pool; each tool result must carry the answer to its own caller's prompt.
    def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompt = params.messages[0].content
        assert isinstance(prompt, types.TextContent)
        return types.CreateMessageResult(content=types.TextContent(text=prompt.text[::-1]), model="reverse")

    client = mcpsync.Client.stdio(
        sdk_server[0], args=sdk_server[1:], mode="legacy", timeout=60.0, sampling_handler=sampling
    )
    failures: list[str] = []

    def worker(index: int) -> None:
        for call in range(15):
            prompt = f"prompt-{index}-{call}"
            try:
                answer = client.call_tool("sample", {"prompt": prompt}).structured_content
                if answer["content"]["text"] != prompt[::-1]:
                    failures.append(f"{prompt} got {answer['content']['text']}")
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(repr(exc))

    with client:
        client.connect()
        workers = [
            threading.Thread(target=worker, args=(i,), name=f"test-sample-{i}", daemon=True)
            for i in range(12)
        ]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join(timeout=90)
        assert not any(thread.is_alive() for thread in workers)
    assert failures == []


@pytest.mark.timeout(60)
def test_server_errors_go_to_their_caller() -> None:
    # Error replies are matched by id like results: each thread sees only its own method's error.
    client = mcpsync.Client.stdio(sys.executable, args=[str(ECHO_SERVER)], timeout=30.0)
    failures: list[str] = []

    def worker(index: int) -> None:
        for call in range(100):
            try:
                if index % 2:
                    client.request(f"custom/method-{index}-{call}")
                    failures.append("no error raised")
                else:
                    payload = f"{index}-{call}"
                    if client.call_tool("echo", {"text": payload}).text != payload:
                        failures.append(f"wrong echo for {payload}")
            except mcpsync.MethodNotFound as exc:
                if f"custom/method-{index}-{call}" not in str(exc):
                    failures.append(f"thread {index} got someone else's error: {exc}")
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(repr(exc))

    with client:
        client.connect()
        workers = [
            threading.Thread(target=worker, args=(i,), name=f"test-err-{i}", daemon=True) for i in range(8)
        ]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in workers)
    assert failures == []
