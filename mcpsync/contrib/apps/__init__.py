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
from typing import Any, Callable
from urllib.parse import urlsplit

import attrs

from ..._version import __version__
from ...auth import AuthorizationRequired
from ...config import ConfigError
from ...exceptions import McpError, ToolNotVisible
from ...types import to_wire

log = logging.getLogger(__name__)

_ASSETS = Path(__file__).resolve().parent
#: Permission Policy features of the declared ``_meta.ui.permissions``.
_FEATURES = {"camera": "camera", "microphone": "microphone", "geolocation": "geolocation",
             "clipboardWrite": "clipboard-write"}
_NO_STORE = {"Cache-Control": "no-store"}
#: The tallest the host lets an app grow (CSS pixels).
MAX_HEIGHT = 4000


@attrs.frozen
class Reply:
    """What a view answers: status, body (``str``: HTML; else JSON), headers."""

    status: int
    body: Any
    headers: dict[str, str] = attrs.field(factory=lambda: dict(_NO_STORE))


@functools.cache
def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of *url*, lower-cased."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def sandbox_origin(setting: Any, host_origin: str) -> str:
    """The configured sandbox origin (``MCP_APPS_SANDBOX_ORIGIN``), checked.

    :raises ConfigError: unset, not an http(s) origin, or the host page's own origin.
    """
    origin = origin_of(setting) if isinstance(setting, str) else ""
    if not origin.startswith(("http://", "https://")) or origin.endswith("://"):
        raise ConfigError("MCP_APPS_SANDBOX_ORIGIN must be the origin that serves the MCP Apps sandbox,"
                          f" e.g. 'https://mcp-sandbox.example.com' (got {setting!r})")
    if origin == host_origin.lower():
        raise ConfigError(f"MCP_APPS_SANDBOX_ORIGIN ({origin}) must differ from the host page's origin:"
                          " an app on the page's own origin could act as the user")
    return origin


def _script_json(value: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def app_page(
    client: Any, server: str, tool_name: str, arguments: str | None, *,
    host_origin: str, sandbox: str, sandbox_url: Callable[[dict[str, str]], str], call_url: str,
    csrf: tuple[str, str],
) -> Reply:
    """The host page of *tool_name*'s app, after calling the tool with *arguments* (JSON).

    :param sandbox: the sandbox origin (:func:`sandbox_origin`).
    :param sandbox_url: the sandbox page's URL (on that origin) carrying a payload, signed.
    :param csrf: the header name and token the bridge sends with its calls.
    """
    try:
        args = json.loads(arguments) if arguments else {}
    except ValueError:
        args = None
    if not isinstance(args, dict):
        return Reply(400, "the arguments must be a JSON object", {"Content-Type": "text/plain"})
    try:
        tool = next((t for t in client.list_tools() if t.name == tool_name), None)
        if tool is None or tool.ui is None or tool.ui.resource_uri is None:
            return Reply(404, "no such tool with an app on this server", {"Content-Type": "text/plain"})
        app = client.read_app(tool)
    except AuthorizationRequired:
        raise  # the framework sends the user to the login
    except McpError as exc:
        log.warning("MCP app %s/%s: %s: %s", server, tool_name, type(exc).__name__, exc)
        return Reply(502, f"the MCP server {server!r} failed ({type(exc).__name__})", {"Content-Type": "text/plain"})
    result: Any = None
    cancelled = None
    try:
        result = to_wire(client.call_tool(tool_name, args))
    except AuthorizationRequired:
        raise
    except McpError as exc:
        cancelled = f"{type(exc).__name__}: {exc}"
    csp = app.csp_header()
    log.info("MCP app %s of %s/%s served with CSP %r", app.uri, server, tool_name, csp)
    config = {
        "sandboxOrigin": sandbox, "callUrl": call_url, "csrfHeader": csrf[0],
        "csrfToken": csrf[1], "hostInfo": {"name": "mcpsync", "version": __version__},
        "tool": to_wire(tool), "arguments": args, "result": result, "cancelled": cancelled,
        "html": app.html, "csp": _wire_csp(app), "permissions": {p: {} for p in sorted(app.permissions)},
        "maxHeight": MAX_HEIGHT,
    }
    title = html.escape(tool.title or tool.name)
    page = Template(_asset("host.html")).substitute(
        title=title,
        src=html.escape(sandbox_url({"csp": csp, "host": host_origin})),
        allow=html.escape("; ".join(_FEATURES[p] for p in sorted(app.permissions))),
        border="border:1px solid #8888;border-radius:8px" if app.prefers_border else "border:0",
        config=_script_json(config),
        script=_asset("host.js"),
    )
    return Reply(200, page)


def _wire_csp(app: Any) -> dict[str, list[str]]:
    csp = app.csp
    names = {"connectDomains": csp.connect_domains, "resourceDomains": csp.resource_domains,
             "frameDomains": csp.frame_domains, "baseUriDomains": csp.base_uri_domains}
    return {key: list(value) for key, value in names.items() if value}


def sandbox_page(payload: Any) -> Reply:
    """The sandbox proxy for a verified *payload* (``None``: the signature did not check out)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("csp"), str) or not isinstance(payload.get("host"), str):
        return Reply(400, "not a valid sandbox link", {"Content-Type": "text/plain"})
    page = Template(_asset("sandbox.html")).substitute(host=_script_json(payload["host"]))
    # Two policies: the app's, and who may frame it.  The inner srcdoc frame inherits both.
    return Reply(200, page, {
        "Content-Security-Policy": f"{payload['csp']}, frame-ancestors {payload['host']}",
        "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
    })


def app_call(client: Any, server: str, body: bytes) -> Reply:
    """A ``tools/call`` from an app of *server*: ``{"name": ..., "arguments": {...}}``.

    The reply is the ``CallToolResult`` (wire form), or ``{"error": {"code", "message"}}``:
    400 for a bad request, 403 for a tool not visible to apps (or not this server's), 401
    when the user must connect the server again, 502 when the server failed.
    """
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

