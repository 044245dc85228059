"""What a failed HTTP connection is called: the real reason, in words, never cut mid-word."""

from __future__ import annotations

import pytest
import requests

import mcpsync
from mcpsync.exceptions import ServerStartError
from mcpsync.transports.http.wire import connection_error
from tests.contrib_support import free_port

pytestmark = pytest.mark.timeout(60)


def test_a_refused_connection_is_called_refused_not_closed() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(ServerStartError) as info:
        with mcpsync.Client.http(url, timeout=10) as client:
            client.list_tools()
    text = str(info.value)
    assert text.startswith("could not connect: ")
    assert f"to {url} failed: connection refused" in text
    assert "closed the connection" not in text
    assert info.value.__cause__ is not None and not info.value.__cause__.outcome_unknown  # type: ignore[attr-defined]


def test_real_requests_errors_get_their_reason() -> None:
    try:
        requests.get(f"http://127.0.0.1:{free_port()}/", timeout=5)
    except requests.RequestException as exc:
        refused = connection_error(exc, "POST x failed", outcome_unknown=True)
    assert refused.message == ("POST x failed: connection refused (is the server running, and is"
                               " that the right port?)")
    assert not refused.outcome_unknown  # nothing was sent
    try:
        requests.get("http://no-such-host.invalid/", timeout=5)
    except requests.RequestException as exc:
        unknown = connection_error(exc, "POST x failed")
    assert unknown.message == "POST x failed: cannot resolve the host name"


def test_other_texts_are_cut_at_a_word_boundary() -> None:
    exc = requests.ConnectionError(" ".join(f"word{i}" for i in range(200)))
    message = connection_error(exc, "GET failed", outcome_unknown=True).message
    kept, _, rest = message.partition(" ... (")
    prefix = "GET failed: ConnectionError: "
    assert kept.startswith(prefix)
    words = kept[len(prefix):].split()
    assert words == [f"word{i}" for i in range(len(words))]  # whole words only, none cut
    assert rest.endswith(" more chars)")
    assert len(kept) < 400
