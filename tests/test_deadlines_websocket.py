"""WebSocket (issue 12): an upgrade refused with 401/403 is an AuthError that is also an
HTTPStatusError, against the real WebSocket bridge (``servers/ws_bridge.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ws_harness import Bridge

import mcpsync

pytestmark = pytest.mark.timeout(60)

TOKEN = "tok-zz-1234567"


@pytest.fixture(scope="module")
def bridge() -> Iterator[Bridge]:
    server = Bridge()
    yield server
    server.stop()


@pytest.mark.parametrize(("query", "status"), [({"token": TOKEN}, 401), ({"header": "X-Api-Key:k-42"}, 403)])
def test_f7_refused_upgrade_is_an_auth_error_and_an_http_status_error(
        bridge: Bridge, query: dict[str, str], status: int) -> None:
    from mcpsync.exceptions import HTTPAuthError  # new in issue 12

    client = mcpsync.Client.websocket(bridge.url(**query), headers={"Authorization": "Bearer wrong-secret-99"},
                                      mode="legacy")
    try:
        with pytest.raises(mcpsync.AuthError) as info:
            client.connect()
    finally:
        client.close()
    assert isinstance(info.value, HTTPAuthError) and isinstance(info.value, mcpsync.HTTPStatusError)
    assert info.value.status == status
    assert "wrong-secret-99" not in str(info.value)
