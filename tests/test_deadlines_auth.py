# ruff: noqa: F811  (fixtures imported from tests/auth_server/conftest_auth.py)
"""An OAuth refresh triggered by a call ends by the call's deadline (issue 12, the refresh row).

Against real peers: oidc-provider (``tests/auth_server/server.mjs``) whose token
endpoint is made to hang (``/test/token-delay``), and the official SDK's MCP
server behind a JWT check (``resource_server.py``), with JSON replies and with
SSE replies.  A call whose access token has expired refreshes it first (and one whose token
the server refuses with 401 refreshes it in the response hook); with the
token endpoint hanging, the call raises :class:`~mcpsync.RequestTimeout` (not an
:class:`~mcpsync.auth.AuthError`) within a second of its deadline, threads
waiting behind the refresh give up at their own deadlines, and the refresh token
is not lost: once the endpoint answers again, exactly one refresh happens and
nobody has to log in again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

import mcpsync
from mcpsync.auth import AuthError, LoopbackLogin, MemoryTokenStore, OAuth
from tests.auth_server.conftest_auth import (  # noqa: F401
    auth_server,
    browse,
    protected_server,
)

pytestmark = pytest.mark.timeout(120)

#: A deadline is met when the caller is back within this many seconds of it.
SLACK = 1.0


@pytest.fixture(params=["json", "sse"])
def protected(request: pytest.FixtureRequest, auth_server: str) -> Iterator[str]:
    """The protected MCP server's URL, answering with JSON or with SSE."""
    options = ("--json",) if request.param == "json" else ()
    with protected_server(auth_server, *options) as url:
        yield url


def _token_delay(issuer: str, seconds: float) -> None:
    requests.get(f"{issuer}/test/token-delay", params={"seconds": seconds}, timeout=5).raise_for_status()


def _stats(issuer: str) -> dict[str, int]:
    return dict(requests.get(f"{issuer}/test/stats", timeout=5).json())


class _Logins:
    """An ``open_browser`` that logs in headlessly and counts the logins."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, url: str) -> bool:
        self.count += 1
        return browse(url)


def _logged_in(url: str) -> tuple[mcpsync.Client, OAuth, MemoryTokenStore, _Logins]:
    store = MemoryTokenStore()
    logins = _Logins()
    auth = OAuth(store=store, login=LoopbackLogin(open_browser=logins, timeout=30))
    client = mcpsync.Client.http(url, auth=auth, transport="streamable-http", timeout=20)
    try:
        assert client.call_tool("whoami").text == "alice"
        assert logins.count == 1
    except BaseException:
        client.close()  # the caller's try/finally starts only once this returns
        raise
    return client, auth, store, logins


def _expire(url: str, auth: OAuth, store: MemoryTokenStore, how: str = "expired") -> None:
    """Make the next call refresh: before sending (*expired*) or on the server's 401 (*rejected*)."""
    record = store.load(url)
    assert record is not None and record["tokens"]["refresh_token"]
    if how == "expired":
        record["tokens"]["expires_at"] = 0
    else:  # a token the server no longer accepts, though it has not expired here
        record["tokens"]["access_token"] = "revoked-" + record["tokens"]["access_token"][:16]
    store.save(url, record)
    for binding in auth._bindings.values():  # as a fresh process would: read the store
        binding.tokens = None


def _recovers(client: mcpsync.Client, issuer: str, refreshes_before: int, logins: _Logins) -> None:
    """The abandoned refresh spent nothing: once the endpoint answers, one refresh, no new login."""
    _token_delay(issuer, 0)
    assert client.call_tool("whoami", timeout=20).text == "alice"
    assert _stats(issuer)["refresh"] - refreshes_before == 1
    assert logins.count == 1


@pytest.mark.parametrize("how", ["expired", "rejected"])
def test_a9_refresh_on_a_hanging_token_endpoint_ends_at_the_call_deadline(
    protected: str, auth_server: str, how: str
) -> None:
    client, auth, store, logins = _logged_in(protected)
    try:
        _expire(protected, auth, store, how)
        before = _stats(auth_server)["refresh"]
        _token_delay(auth_server, 60)
        start = time.monotonic()
        with pytest.raises(mcpsync.RequestTimeout) as caught:
            client.call_tool("whoami", timeout=1.0)
        elapsed = time.monotonic() - start
        assert elapsed < 1.0 + SLACK, f"the call came back after {elapsed:.2f} s"
        assert not isinstance(caught.value, AuthError)
        assert "deadline" in str(caught.value)

        _recovers(client, auth_server, before, logins)
    finally:
        client.close()


@pytest.mark.parametrize("protected", ["json"], indirect=True)
def test_f6_threads_behind_a_hanging_refresh_end_at_their_own_deadlines(
    protected: str, auth_server: str
) -> None:
    client, auth, store, logins = _logged_in(protected)
    try:
        _expire(protected, auth, store)
        before = _stats(auth_server)["refresh"]
        _token_delay(auth_server, 60)
        barrier = threading.Barrier(4)
        outcomes: list[tuple[BaseException | None, float]] = []
        lock = threading.Lock()

        def call(timeout: float) -> None:
            barrier.wait(10)
            start = time.monotonic()
            error: BaseException | None = None
            try:
                client.call_tool("whoami", timeout=timeout)
            except BaseException as exc:  # noqa: BLE001 - checked below
                error = exc
            with lock:
                outcomes.append((error, time.monotonic() - start - timeout))

        # Different deadlines: the one refreshing and those waiting for its lock all end by theirs.
        threads = [threading.Thread(target=call, args=(0.5 + 0.25 * i,), name=f"caller-{i}") for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(outcomes) == 4
        for error, late in outcomes:
            assert isinstance(error, mcpsync.RequestTimeout), repr(error)
            assert late < SLACK, f"a caller came back {late:.2f} s after its deadline"

        _recovers(client, auth_server, before, logins)
    finally:
        client.close()


def test_a9_the_transport_hands_the_deadline_to_the_auth_handler_under_the_name_it_reads() -> None:
    """The transport puts the call's one Deadline on the request; auth reads that same object."""
    from mcpsync.auth import _deadline
    from mcpsync.rpc.deadline import Deadline
    from mcpsync.transports.http.fast_send import Sender

    deadline = Deadline(5.0)
    seen: list[Any] = []

    class Stop(Exception):
        pass

    def auth(request: Any) -> Any:
        seen.append(_deadline.of(request))
        raise Stop

    sender = Sender(requests.Session(), auth, "http://127.0.0.1:9/mcp")
    with pytest.raises(Stop):
        sender.send("POST", "http://127.0.0.1:9/mcp", headers={}, timeout=(1.0, 1.0), deadline=deadline)
    assert seen == [deadline]


def test_a_call_without_a_timeout_waits_for_another_process_s_token_refresh(tmp_path: Any) -> None:
    """A call made with ``timeout=None`` (a Deadline with no end) waits for the lock file another
    process holds while it refreshes; it used to raise RequestTimeout at once."""
    import os

    from mcpsync.auth import FileTokenStore, _deadline
    from mcpsync.rpc.deadline import Deadline

    fcntl = pytest.importorskip("fcntl")
    store = FileTokenStore(tmp_path / "tokens")
    other = os.open(store._lock_file("k"), os.O_RDWR | os.O_CREAT, 0o600)  # the other process's hold
    fcntl.flock(other, fcntl.LOCK_EX)
    outcome: list[object] = []

    def call() -> None:
        try:
            with _deadline.within(Deadline(None)), store.lock("k"):
                outcome.append("held")
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    try:
        thread.join(0.5)
        still_waiting = list(outcome)
    finally:
        os.close(other)  # the other process is done: its lock goes
        thread.join(10)
    assert still_waiting == []
    assert outcome == ["held"]
