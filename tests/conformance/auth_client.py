"""mcpsync's own OAuth handling for the conformance suite's ``auth/*`` scenarios.

The conformance client (``tests/conformance/client.py``) calls
:func:`auth_for_scenario` and passes the result as ``Client.http(url, auth=...)``.
Run alone, ``python tests/conformance/auth_client.py URL`` does the whole
scenario itself (connect, list tools, call ``test-tool``), which is how the
auth scenarios are checked before the two clients are wired together.

No browser: :func:`headless_browser` GETs the authorization URL without
following the redirect and delivers the ``Location`` (the callback with
``code`` and ``state``) to mcpsync's own loopback receiver.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import requests

from mcpsync.auth import (
    IdJagAssertion,
    LoopbackLogin,
    MemoryTokenStore,
    OAuth,
    WorkloadIdentityAssertion,
)

__all__ = ["auth_for_scenario", "headless_browser", "main", "run"]

#: The client ID metadata document URL the ``auth/basic-cimd`` scenario expects.
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def headless_browser(url: str) -> bool:
    """Play the user's browser: follow the authorization URL to the loopback callback."""
    with requests.Session() as browser:
        first = browser.get(url, allow_redirects=False, timeout=10)
        location = first.headers.get("Location")
        if first.status_code not in (301, 302, 303, 307, 308) or not location:
            raise RuntimeError(
                f"authorization endpoint answered {first.status_code} without a redirect"
            )
        browser.get(
            location, allow_redirects=False, timeout=10
        )  # our own 127.0.0.1 receiver
    return True


def auth_for_scenario(scenario: str, context: dict[str, Any] | None = None) -> OAuth:
    """The ``OAuth`` object for *scenario*, from ``MCP_CONFORMANCE_CONTEXT`` when given."""
    ctx = context or {}
    login = LoopbackLogin(open_browser=headless_browser, timeout=20)
    common: dict[str, Any] = {
        "store": MemoryTokenStore(),
        "client_name": "mcpsync-conformance",
    }
    if scenario.startswith("auth/client-credentials"):
        key = ctx.get("private_key_pem")
        return OAuth(
            grant_type="client_credentials",
            client_id=ctx["client_id"],
            client_secret=ctx.get("client_secret"),
            private_key=key,
            signing_algorithm=ctx.get("signing_algorithm"),
            login=None,
            **common,
        )
    if scenario == "auth/wif-jwt-bearer":
        # The platform's JWT; the scenario also hands out bad ones (wrong audience,
        # expired), which tests/test_auth_workload.py sends to check the errors.
        return OAuth(
            grant_type="jwt_bearer",
            client_id=ctx["client_id"],
            assertion=WorkloadIdentityAssertion(token=ctx["valid_jwt"]),
            login=None,
            **common,
        )
    if scenario in (
        "auth/enterprise-managed-authorization",
        "auth/cross-app-access-complete-flow",  # its name before 0.2.0-alpha.12
    ):
        assertion = IdJagAssertion(
            token_endpoint=ctx["idp_token_endpoint"],
            id_token=ctx["idp_id_token"],
            client_id=ctx["idp_client_id"],
        )
        return OAuth(
            grant_type="jwt_bearer",
            client_id=ctx["client_id"],
            client_secret=ctx["client_secret"],
            assertion=assertion,
            login=None,
            **common,
        )
    if ctx.get("client_id"):
        return OAuth(
            login=login,
            client_id=ctx["client_id"],
            client_secret=ctx.get("client_secret"),
            **common,
        )
    return OAuth(login=login, client_metadata_url=CIMD_URL, **common)


def run(scenario: str, url: str, context: dict[str, Any] | None = None) -> int:
    """What a conformance client does for an auth scenario; the exit status."""
    import mcpsync

    auth = auth_for_scenario(scenario, context)
    with mcpsync.Client.http(
        url, auth=auth, transport="streamable-http", timeout=20
    ) as client:
        tools = client.list_tools()
        if any(tool.name == "test-tool" for tool in tools):
            client.call_tool("test-tool", {})
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return run(scenario, argv[-1], json.loads(raw) if raw else None)


if __name__ == "__main__":
    sys.exit(main())
