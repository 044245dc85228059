"""JWT bearer grants: workload identity (SEP-1933) and enterprise-managed authorization (ID-JAG, SEP-990).

The real peers are the conformance suite's scenarios (``auth/wif-jwt-bearer``,
``auth/enterprise-managed-authorization``, run here through the suite's runner
with ``tests/conformance/auth_client.py``).  The staged servers below
(``responses``) add what the scenarios do not exercise: a refused grant is
reported once (no retry, no other grant type), a rotated token file is
picked up, and no assertion, ID token or client secret shows in an error or repr.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
import requests
import responses

from mcpsync.auth import (
    IdJagAssertion,
    MemoryTokenStore,
    OAuth,
    TokenRequestError,
    WorkloadIdentityAssertion,
)
from tests.contrib_support import require
from tests.test_auth_unit import AS, MCP, SECRET, _as_meta, _mount_metadata, rsps  # noqa: F401

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[1]
#: Beside the repository in CI, as for tests/conformance/test_conformance_suite.py; a git
#: worktree elsewhere names it in CONFORMANCE_RUNNER.
SUITE = Path(
    os.environ.get("CONFORMANCE_RUNNER")
    or REPO.parent / "shared" / "tools" / "conformance" / "run_client_suite.sh"
)
IDP = "https://idp.example.com"
JWT = f"eyJhbGciOiJFUzI1NiJ9.{SECRET}-wif.c2ln"
ID_TOKEN = f"eyJhbGciOiJSUzI1NiJ9.{SECRET}-idtoken.c2ln"
ID_JAG = f"eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.{SECRET}-jag.c2ln"


def _form(request: requests.PreparedRequest) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(str(request.body)).items()}


def _stage(rsps: responses.RequestsMock, token: Any) -> list[dict[str, str]]:
    """The MCP server (bearer check), its metadata, and a token endpoint answered by *token*."""
    seen: list[dict[str, str]] = []

    def token_endpoint(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        form = _form(request)
        form["_authorization"] = str(request.headers.get("Authorization", ""))
        seen.append(form)
        status, body = token(form)
        return status, {}, json.dumps(body)

    def mcp(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        if request.headers.get("Authorization") == "Bearer at-1":
            return 200, {}, "{}"
        return 401, {"WWW-Authenticate": "Bearer"}, ""

    _mount_metadata(
        rsps,
        meta=_as_meta(
            grant_types_supported=["urn:ietf:params:oauth:grant-type:jwt-bearer"],
            token_endpoint_auth_methods_supported=["client_secret_basic", "none"],
        ),
    )
    rsps.add_callback(responses.POST, AS + "/token", callback=token_endpoint)
    rsps.add_callback(responses.POST, MCP, callback=mcp)
    return seen


def _call(auth: OAuth) -> requests.Response:
    with requests.Session() as s:
        return s.post(MCP, data=b"{}", auth=auth)


def _wif(assertion: Any) -> OAuth:
    return OAuth(
        grant_type="jwt_bearer",
        client_id="workload",
        assertion=assertion,
        login=None,
        store=MemoryTokenStore(),
        server_url=MCP,
        resolve_hosts=False,
    )


# -- workload identity --------------------------------------------------------------------------


def test_the_platform_token_is_the_grant_and_a_rotated_file_is_read_again(
    rsps: responses.RequestsMock, tmp_path: Path
) -> None:
    path = tmp_path / "token"
    path.write_text(JWT + "\n")
    seen = _stage(rsps, lambda form: (200, {"access_token": "at-1", "token_type": "Bearer"}))
    assertion = WorkloadIdentityAssertion(token_file=path)
    assert _call(_wif(assertion)).status_code == 200
    assert seen == [
        {
            "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
            "assertion": JWT,
            "resource": MCP,
            "client_id": "workload",
            "_authorization": "",
        }
    ]
    rotated = JWT.replace("wif", "wif2")
    path.write_text(rotated)
    assert assertion(AS, MCP, None) == rotated


def test_a_refused_grant_is_reported_once_without_retry_or_fallback(
    rsps: responses.RequestsMock,
) -> None:
    seen = _stage(
        rsps,
        lambda form: (400, {"error": "invalid_grant", "error_description": f"bad {form['assertion']}"}),
    )
    with pytest.raises(TokenRequestError) as info:
        _call(_wif(WorkloadIdentityAssertion(token=JWT)))
    assert info.value.error == "invalid_grant"
    assert len(seen) == 1  # no retry, no other grant type (the wif-no-retry rule)
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)


def test_a_refused_renewal_is_final_too(rsps: responses.RequestsMock) -> None:
    """When the token expires, the new assertion's refusal is reported; no second try as a login."""
    answers = iter([(200, {"access_token": "at-1", "token_type": "Bearer", "expires_in": 1})])
    seen = _stage(rsps, lambda form: next(answers, (400, {"error": "invalid_grant"})))
    auth = _wif(WorkloadIdentityAssertion(token=JWT))
    assert _call(auth).status_code == 200  # expires_in=1: expiring at once (30 s margin)
    with pytest.raises(TokenRequestError) as info:
        _call(auth)
    assert info.value.error == "invalid_grant"
    assert len(seen) == 2


def test_bad_token_sources_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        WorkloadIdentityAssertion()
    with pytest.raises(ValueError, match="exactly one"):
        WorkloadIdentityAssertion(token=JWT, token_file=tmp_path / "x")
    with pytest.raises(TokenRequestError, match="cannot read"):
        WorkloadIdentityAssertion(token_file=tmp_path / "missing")(AS, MCP, None)
    big = tmp_path / "big"
    big.write_bytes(b"a.b." + b"c" * 70000)
    with pytest.raises(TokenRequestError, match="too large"):
        WorkloadIdentityAssertion(token_file=big)(AS, MCP, None)
    with pytest.raises(TokenRequestError, match="not a JWT") as info:
        WorkloadIdentityAssertion(provider=lambda: SECRET)(AS, MCP, None)
    assert SECRET not in str(info.value)
    assert SECRET not in repr(WorkloadIdentityAssertion(token=JWT))
    assert "token_file" in repr(WorkloadIdentityAssertion(token_file=big))


# -- enterprise-managed authorization (ID-JAG) --------------------------------------------------


def _enterprise(rsps: responses.RequestsMock, idp: Any) -> tuple[OAuth, list[dict[str, str]]]:
    def idp_token(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        status, body = idp(_form(request))
        return status, {}, json.dumps(body)

    rsps.add_callback(responses.POST, IDP + "/token", callback=idp_token)

    def as_token(form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        ok = form["assertion"] == ID_JAG and form["_authorization"] == "Basic " + base64.b64encode(
            f"app:{SECRET}-cs".encode()
        ).decode()
        return (200, {"access_token": "at-1", "token_type": "Bearer"}) if ok else (400, {"error": "invalid_grant"})

    seen = _stage(rsps, as_token)
    auth = OAuth(
        grant_type="jwt_bearer",
        client_id="app",
        client_secret=SECRET + "-cs",
        assertion=IdJagAssertion(
            token_endpoint=IDP + "/token", id_token=ID_TOKEN, client_id="app-at-idp"
        ),
        login=None,
        store=MemoryTokenStore(),
        server_url=MCP,
        resolve_hosts=False,
    )
    return auth, seen


def test_id_jag_token_exchange_then_jwt_bearer_grant(rsps: responses.RequestsMock) -> None:
    exchanges: list[dict[str, str]] = []

    def idp(form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        exchanges.append(form)
        return 200, {
            "access_token": ID_JAG,
            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "token_type": "N_A",
        }

    auth, seen = _enterprise(rsps, idp)
    assert _call(auth).status_code == 200
    assert exchanges == [
        {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": ID_TOKEN,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": AS,
            "resource": MCP,
            "client_id": "app-at-idp",
        }
    ]
    assert len(seen) == 1 and seen[0]["grant_type"].endswith("jwt-bearer")


@pytest.mark.parametrize(
    "answer",
    [
        (400, {"error": "invalid_grant", "error_description": f"bad {ID_TOKEN}"}),
        (200, {"access_token": ID_JAG, "issued_token_type": "urn:ietf:params:oauth:token-type:jwt"}),
        (200, {"token_type": "N_A"}),
    ],
)
def test_identity_provider_refusals_are_typed_and_secret_free(
    rsps: responses.RequestsMock, caplog: pytest.LogCaptureFixture, answer: tuple[int, dict[str, Any]]
) -> None:
    caplog.set_level(logging.DEBUG)
    auth, seen = _enterprise(rsps, lambda form: answer)
    with pytest.raises(TokenRequestError) as info:
        _call(auth)
    assert seen == []  # nothing reached the MCP server's authorization server
    texts = [str(info.value), repr(info.value), repr(auth), repr(auth.settings.assertion), repr(auth.settings)]
    texts += [r.getMessage() for r in caplog.records]
    assert not [t for t in texts if SECRET in t]


# -- the conformance suite's scenarios (real peers) ---------------------------------------------


@pytest.mark.node
@pytest.mark.parametrize(
    "scenario",
    [
        "auth/wif-jwt-bearer",
        "auth/enterprise-managed-authorization",
        "auth/dpop",
        "auth/dpop-nonce",
        "auth/client-credentials-jwt",
        "auth/client-credentials-basic",
    ],
)
def test_conformance_auth_extension_scenario(scenario: str, tmp_path: Path) -> None:
    require(None if SUITE.exists() else f"conformance runner not found at {SUITE}")
    argv = [str(SUITE), "-q", "-o", str(tmp_path), "-s", scenario]
    argv.append(f"exec {sys.executable} tests/conformance/client.py")
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0 and "1 passed, 0 failed" in proc.stdout, proc.stdout[-4000:]
