"""The MCP Apps host pages, framework aside (the Django views and the Flask routes call these).

* :func:`app_page`: ``GET apps/<server>/<tool>/?arguments=<JSON>``: calls the tool for the
  user, and answers the host page: the sandbox iframe (on the sandbox origin, apart from
  the page's), the app's HTML, its input and result, and the bridge (``apps/host.js``).
* :func:`sandbox_page`: the sandbox proxy (``apps/sandbox.html``), served on the sandbox
  origin only, with the app's ``csp_header()`` (signed into its URL by the host page) and
  ``frame-ancestors`` the host page's origin.  It holds no user data: the HTML comes by
  ``postMessage`` from the host page, and the app runs in an inner ``srcdoc`` iframe
  (opaque origin) that inherits the sandbox document's CSP.
* :func:`app_call`: ``POST apps/<server>/call/``: a ``tools/call`` from the app, through
  the user's client, with ``caller="app"`` (visibility enforced; a tool that server does
  not list, such as another server's, is refused).

Nothing here imports a framework; each reply is a :class:`Reply`.  The pages' HTML and
JavaScript are beside this module (``host.html``, ``host.js``, ``sandbox.html``).

May import: :mod:`mcpsync.contrib`'s own modules and everything below it; no framework.
"""

from __future__ import annotations

import functools
import html
import json
import logging
from pathlib import Path
from string import Template
from typing import Any

from ..._version import __version__
from ...auth import AuthorizationRequired
from ...auth._discovery import origin
from ...config import ConfigError
from ...exceptions import McpError, ToolNotVisible
from ...types import to_wire
from .._useroauth import client_of
from .._web import Reply, Web, plain

log = logging.getLogger(__name__)

_ASSETS = Path(__file__).resolve().parent
#: Permission Policy features of the declared ``_meta.ui.permissions``.
_FEATURES = {"camera": "camera", "microphone": "microphone", "geolocation": "geolocation",
             "clipboardWrite": "clipboard-write"}
#: The tallest the host lets an app grow (CSS pixels).
MAX_HEIGHT = 4000


@functools.cache
def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def sandbox_origin(setting: Any, host_origin: str) -> str:
    """The configured sandbox origin (``MCP_APPS_SANDBOX_ORIGIN``), checked.

    :raises ConfigError: unset, not an http(s) origin, or the host page's own origin.
    """
    sandbox = origin(setting) if isinstance(setting, str) else ""
    if not sandbox.startswith(("http://", "https://")) or sandbox.endswith("://"):
        raise ConfigError("MCP_APPS_SANDBOX_ORIGIN must be the origin that serves the MCP Apps sandbox,"
                          f" e.g. 'https://mcp-sandbox.example.com' (got {setting!r})")
    if sandbox == host_origin.lower():
        raise ConfigError(f"MCP_APPS_SANDBOX_ORIGIN ({sandbox}) must differ from the host page's origin:"
                          " an app on the page's own origin could act as the user")
    return sandbox


def _script_json(value: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def app_page(web: Web, server: str, tool: str) -> Reply:
    """``GET apps/<server>/<tool>/?arguments=<JSON>``: the host page of *tool*'s app,
    after calling the tool with the arguments; a 404 for a tool without a UI."""
    sandbox, csrf = sandbox_origin(web.setting("MCP_APPS_SANDBOX_ORIGIN"), origin(web.url)), web.csrf()
    try:
        args = json.loads(web.args.get("arguments") or "{}")
    except ValueError:
        args = None
    if not isinstance(args, dict):
        return plain(400, "the arguments must be a JSON object")
    with client_of(web, server) as client:
        try:
            found = next((t for t in client.list_tools() if t.name == tool), None)
            if found is None or found.ui is None or found.ui.resource_uri is None:
                return plain(404, "no such tool with an app on this server")
            app = client.read_app(found)
        except AuthorizationRequired:
            raise  # the framework sends the user to the login
        except McpError as exc:
            log.warning("MCP app %s/%s: %s: %s", server, tool, type(exc).__name__, exc)
            return plain(502, f"the MCP server {server!r} failed ({type(exc).__name__})")
        try:
            result, cancelled = to_wire(client.call_tool(tool, args)), None
        except AuthorizationRequired:
            raise
        except McpError as exc:
            result, cancelled = None, f"{type(exc).__name__}: {exc}"
    csp = app.csp_header()
    log.info("MCP app %s of %s/%s served with CSP %r", app.uri, server, tool, csp)
    config = {
        "sandboxOrigin": sandbox, "callUrl": web.reverse("app-call", server=server), "csrfHeader": csrf[0],
        "csrfToken": csrf[1], "hostInfo": {"name": "mcpsync", "version": __version__},
        "tool": to_wire(found), "arguments": args, "result": result, "cancelled": cancelled,
        "html": app.html, "csp": {key: list(value) for key, value in _csp_names(app.csp).items() if value}, "permissions": {p: {} for p in sorted(app.permissions)},
        "maxHeight": MAX_HEIGHT,
    }
    link = f"{sandbox}{web.reverse('app-sandbox')}?s={web.sign({'csp': csp, 'host': origin(web.url)})}"
    page = Template(_asset("host.html")).substitute(
        title=html.escape(found.title or found.name),
        src=html.escape(link),
        allow=html.escape("; ".join(_FEATURES[p] for p in sorted(app.permissions))),
        border="border:1px solid #8888;border-radius:8px" if app.prefers_border else "border:0",
        config=_script_json(config),
        script=_asset("host.js"),
    )
    return Reply(200, page)


def _csp_names(csp: Any) -> dict[str, Any]:
    return {"connectDomains": csp.connect_domains, "resourceDomains": csp.resource_domains,
            "frameDomains": csp.frame_domains, "baseUriDomains": csp.base_uri_domains}


def sandbox_page(web: Web) -> Reply:
    """``GET apps/sandbox/?s=<signed payload>``: the sandbox proxy, on the sandbox origin only."""
    if origin(web.url) != origin(str(web.setting("MCP_APPS_SANDBOX_ORIGIN") or "")):
        web.not_found("the MCP Apps sandbox is served on MCP_APPS_SANDBOX_ORIGIN only")
    payload = web.unsign(web.args.get("s") or "")
    if not isinstance(payload, dict) or not isinstance(payload.get("csp"), str) or not isinstance(payload.get("host"), str):
        return plain(400, "not a valid sandbox link")
    page = Template(_asset("sandbox.html")).substitute(host=_script_json(payload["host"]))
    # Two policies: the app's, and who may frame it.  The inner srcdoc frame inherits both.
    return Reply(200, page, {
        "Content-Security-Policy": f"{payload['csp']}, frame-ancestors {payload['host']}",
        "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
    })


def app_call(web: Web, server: str, body: bytes) -> Reply:
    """``POST apps/<server>/call/`` (CSRF-checked by the framework): a ``tools/call`` from an
    app of *server*, ``{"name": ..., "arguments": {...}}``, through the user's client.

    The reply is the ``CallToolResult`` (wire form), or ``{"error": {"code", "message"}}``:
    400 for a bad request, 403 for a tool not visible to apps (or not this server's), 401
    when the user must connect the server again, 502 when the server failed.
    """
    with client_of(web, server) as client:
        try:
            request = json.loads(body)
            name, arguments = request["name"], request.get("arguments") or {}
            if not isinstance(name, str) or not isinstance(arguments, dict):
                raise TypeError
        except (ValueError, KeyError, TypeError, AttributeError):
            return _error(400, -32602, "expected {\"name\": str, \"arguments\": object}")
        try:
            result = client.call_tool(name, arguments, caller="app")
        except ToolNotVisible as exc:
            log.warning("MCP app of %s: refused tools/call %r: %s", server, name, exc)
            return _error(403, -32602, str(exc))
        except AuthorizationRequired:
            return _error(401, -32001, f"connect {server!r} again to use this app")
        except McpError as exc:
            return _error(502, -32603, f"{type(exc).__name__}: {exc}")
        log.info("MCP app of %s called %r", server, name)
        return Reply(200, to_wire(result))


def _error(status: int, code: int, message: str) -> Reply:
    return Reply(status, {"error": {"code": code, "message": message}})

