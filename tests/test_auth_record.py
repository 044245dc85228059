"""The typed OAuth record (``mcpsync.auth._record``): records saved before it still load and work.

``OLD_BEARER`` and ``OLD_DPOP`` are records exactly as the dict-based ``Authorizer`` saved them
(captured from it against the staged servers of ``test_auth_unit`` and ``test_auth_dpop``,
plus a member of a newer version in each part).  In every kind of store they are used as
they are (no login, no registration), refreshed with the stored registration, and saved
back with every member kept.
"""

from __future__ import annotations

import base64
import copy
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
import requests
import responses

from mcpsync.auth import FileTokenStore, KeyringTokenStore, MemoryTokenStore, TokenStore
from mcpsync.auth._record import Record, Registration, Tokens, to_json
from tests.test_auth_dpop import Servers, _call
from tests.test_auth_stores import dict_keyring  # noqa: F401
from tests.test_auth_unit import AS, MCP, SECRET, _oauth, rsps  # noqa: F401

pytestmark = pytest.mark.timeout(60)

_META = {
    "authorization_endpoint": AS + "/authorize", "code_challenge_methods_supported": ["S256"], "issuer": AS,
    "registration_endpoint": AS + "/register", "response_types_supported": ["code"],
    "token_endpoint": AS + "/token", "token_endpoint_auth_methods_supported": ["client_secret_basic"],
}
OLD_BEARER: dict[str, Any] = {
    "clients": {AS: {
        "client_id": "cid", "client_secret": "csecret", "client_secret_expires_at": 4102444800, "issuer": AS,
        "redirect_uris": ["http://127.0.0.1:41203/callback"], "source": "dcr",
        "token_endpoint_auth_method": "client_secret_basic", "software_id": "kept",
    }},
    "resource": MCP,
    "resource_metadata": {"authorization_servers": [AS], "resource": MCP, "scopes_supported": ["read"]},
    "server": MCP,
    "server_metadata": _META,
    "tokens": {
        "access_token": f"{SECRET}-at1", "bound_to": MCP, "expires_at": 1795769586.3503232, "issuer": AS,
        "refresh_token": f"{SECRET}-rt1", "resource": MCP, "scope": "read", "token_type": "Bearer",
        "id_token": "kept",
    },
    "from_a_newer_version": {"kept": True},
}
OLD_DPOP: dict[str, Any] = {
    "clients": {AS: {"client_id": "cid", "issuer": AS, "redirect_uris": ["http://127.0.0.1:35179/callback"],
                     "source": "dcr", "token_endpoint_auth_method": "none"}},
    "dpop_key": {"crv": "P-256", "d": "027aCM8zn1dXWz70PVFNjNZr4vP1GxK5Et8nK20iIVA", "kty": "EC",
                 "x": "pae88l66DvBjmo3F2DDx_StMw047hSrCn3tfsn3fiIc", "y": "6eB0y784mZ4jdnC71xPy53ocL8xQtnJ_XEj3AZG30dQ"},
    "resource": MCP,
    "resource_metadata": {"authorization_servers": [AS], "resource": MCP},
    "server": MCP,
    "server_metadata": {**_META, "dpop_signing_alg_values_supported": ["ES256", "RS256"],
                        "token_endpoint_auth_methods_supported": ["none"]},
    "tokens": {
        "access_token": f"{SECRET}-at1", "bound_to": MCP, "dpop_jkt": "VrhDtjyZETVPK-bhgu4bzEydXXWAjy023agRQ3AmvNI",
        "expires_at": 1795769586.591816, "issuer": AS, "refresh_token": f"{SECRET}-rt1", "resource": MCP,
        "token_type": "DPoP",
    },
}


def test_records_of_the_dict_era_convert_both_ways_unchanged() -> None:
    for old in (OLD_BEARER, OLD_DPOP):
        record = Record.from_json(copy.deepcopy(old))
        assert isinstance(record.tokens, Tokens) and isinstance(record.clients[AS], Registration)
        assert to_json(record) == old
    record = Record.from_json(OLD_BEARER)
    # resource and resource_metadata (written by earlier versions, read by none) are kept as unknown members.
    assert record.extra == {"from_a_newer_version": {"kept": True}, "resource": MCP,
                            "resource_metadata": OLD_BEARER["resource_metadata"]}
    assert record.clients[AS].client_secret == "csecret"
    assert record.tokens is not None and record.tokens.extra == {"id_token": "kept"}
    # Secrets stay out of the repr.
    assert SECRET not in repr(record) and "csecret" not in repr(record) and "027aCM8" not in repr(Record.from_json(OLD_DPOP))


def test_damaged_parts_load_as_absent() -> None:
    assert Record.from_json(None) == Record() == Record.from_json(["not", "an", "object"])
    record = Record.from_json({"tokens": {"refresh_token": "r"}, "clients": {AS: {"issuer": AS}, "x": 5},
                               "server": MCP})
    assert record.tokens is None and record.clients == {} and record.server == MCP
    assert Record.from_json({"tokens": {"access_token": 7}}).tokens is None


@pytest.fixture(params=["file", "keyring", "sqlalchemy"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> TokenStore:
    """A store of each kind on disk (the SQLAlchemy one seals its rows, as the Flask app's does)."""
    if request.param == "file":
        return FileTokenStore(tmp_path / "tokens")
    if request.param == "keyring":
        request.getfixturevalue("dict_keyring")
        return KeyringTokenStore(service="mcpsync-record-test")
    sa = pytest.importorskip("sqlalchemy")
    from mcpsync.contrib._cipher import RecordCipher
    from mcpsync.contrib.flask.stores import SQLAlchemyTokens
    from tests.contrib_support import TEST_KEY

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'app.db'}")
    tokens = SQLAlchemyTokens(engine, RecordCipher(TEST_KEY))
    tokens.table.metadata.create_all(engine)
    request.addfinalizer(engine.dispose)
    return tokens.for_user("user:alice")


def test_an_earlier_record_is_used_refreshed_and_kept(rsps: responses.RequestsMock, store: TokenStore) -> None:
    old = copy.deepcopy(OLD_BEARER)
    old["tokens"]["expires_at"] = time.time() + 3600
    store.save(MCP, old)
    token_forms: list[dict[str, list[str]]] = []

    def token(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"cid:csecret").decode()
        token_forms.append(parse_qs(str(request.body)))
        return 200, {}, json.dumps({"access_token": f"{SECRET}-at2", "refresh_token": f"{SECRET}-rt2",
                                    "token_type": "Bearer", "expires_in": 3600})

    def mcp(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        ok = request.headers.get("Authorization") in (f"Bearer {SECRET}-at1", f"Bearer {SECRET}-at2")
        return (200, {}, "{}") if ok else (401, {"WWW-Authenticate": "Bearer"}, "")

    rsps.add_callback(responses.POST, AS + "/token", callback=token)
    rsps.add_callback(responses.POST, MCP, callback=mcp)
    with requests.Session() as s:
        assert s.post(MCP, data=b"{}", auth=_oauth(store=store)).status_code == 200  # the stored token as it is
        assert token_forms == []
        expired = store.load(MCP)
        assert expired is not None
        expired["tokens"]["expires_at"] = 0
        store.save(MCP, expired)
        response = s.post(MCP, data=b"{}", auth=_oauth(store=store))
    assert response.status_code == 200 and response.request.headers["Authorization"] == f"Bearer {SECRET}-at2"
    assert token_forms == [{"grant_type": ["refresh_token"], "refresh_token": [f"{SECRET}-rt1"], "resource": [MCP]}]
    assert [c.request.method for c in rsps.calls] == ["POST", "POST", "POST"]  # no discovery, login or registration
    saved = store.load(MCP)
    assert saved is not None and saved["tokens"].pop("expires_at") > time.time()
    expected = copy.deepcopy(OLD_BEARER)
    del expected["tokens"]["expires_at"], expected["tokens"]["id_token"]  # the old tokens' own
    expected["tokens"].update(access_token=f"{SECRET}-at2", refresh_token=f"{SECRET}-rt2")
    assert saved == expected  # every member kept, those of a newer version too


def test_an_earlier_dpop_record_signs_with_its_stored_key(rsps: responses.RequestsMock) -> None:
    servers = Servers(rsps)
    servers.bound[f"{SECRET}-at1"] = OLD_DPOP["tokens"]["dpop_jkt"]
    store = MemoryTokenStore()
    old = copy.deepcopy(OLD_DPOP)
    old["tokens"]["expires_at"] = time.time() + 3600
    store.save(MCP, old)
    assert _call(_oauth(store=store)).status_code == 200  # the proof verified against the stored key
    assert servers.token_requests == [] and servers.mcp_requests[0]["auth"] == f"DPoP {SECRET}-at1"
    assert store.load(MCP) == old
