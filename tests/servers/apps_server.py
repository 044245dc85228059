"""An MCP Apps server built with the official SDK's ``mcp.server.apps`` (``mcp`` 2.3.0).

Run as ``python tests/servers/apps_server.py`` (stdio, dual-era: the first request decides)
or with ``--http`` (Streamable HTTP at ``/mcp`` on 127.0.0.1, an ephemeral port printed as
``PORT=<n>``; the era follows the ``MCP-Protocol-Version`` header).

Tools: ``dashboard`` (UI ``ui://demo/dashboard.html``, default visibility; its result says
whether ``client_supports_apps`` saw the client advertise MCP Apps), ``refresh`` (app only),
``model_only`` (model only), ``flat`` (the deprecated ``_meta["ui/resourceUri"]``), ``plain``
(no UI).  Resources: the dashboard (text, with a declared CSP, permissions and border), a blob
app with nothing declared, ``override.html`` whose ``resources/read`` ``_meta.ui`` differs from
its ``resources/list`` entry, ``wrong.html`` (plain ``text/html``) and ``bad-csp.html``
(CSP entries that are not origins).

The dashboard app runs the browser tests' script by itself: after the tool result it calls an
app-only tool, a model-only tool and another server's tool through the host, fetches
``APPS_PROBE_URL`` (an origin it did not declare), and reports its size.
"""

from __future__ import annotations

import os
import socket
import sys
import warnings
from typing import Any

from mcp.server.apps import APP_MIME_TYPE, Apps, ResourceCsp, ResourcePermissions, client_supports_apps
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources import BinaryResource, TextResource

warnings.simplefilter("ignore")

DASHBOARD = """<!doctype html>
<html><head><meta charset="utf-8"><title>Dashboard</title></head>
<body><h1>Dashboard</h1>
<pre id="context"></pre><pre id="input"></pre><pre id="result"></pre><pre id="app-call"></pre>
<pre id="model-call"></pre><pre id="other-call"></pre><pre id="fetch"></pre><pre id="csp"></pre>
<script>
let next = 1;
const pending = {};
const show = (id, v) => { document.getElementById(id).textContent = typeof v === "string" ? v : JSON.stringify(v); };
function request(method, params) {
  const id = next++;
  parent.postMessage({jsonrpc: "2.0", id, method, params}, "*");
  return new Promise((resolve, reject) => { pending[id] = {resolve, reject}; });
}
function notify(method, params) { parent.postMessage({jsonrpc: "2.0", method, params}, "*"); }
async function call(id, name, args) {
  try { show(id, "ok: " + (await request("tools/call", {name, arguments: args})).content[0].text); }
  catch (e) { show(id, "refused: " + e.message); }
}
document.addEventListener("securitypolicyviolation", e => show("csp", e.violatedDirective + " " + e.blockedURI));
window.addEventListener("message", async (event) => {
  if (event.source !== parent) return;
  const m = event.data;
  if (m.id !== undefined && !m.method) {
    const p = pending[m.id]; delete pending[m.id];
    if (p) { m.error ? p.reject(m.error) : p.resolve(m.result); }
    return;
  }
  if (m.method === "ui/notifications/tool-input") show("input", m.params.arguments);
  if (m.method === "ui/resource-teardown") {
    notify("notifications/message", {level: "info", data: "teardown: " + m.params.reason});
    parent.postMessage({jsonrpc: "2.0", id: m.id, result: {}}, "*");
  }
  if (m.method === "ui/notifications/tool-result") {
    show("result", m.params.structuredContent);
    await call("app-call", "refresh", {n: 2});
    await call("model-call", "model_only", {});
    await call("other-call", "add", {a: 1, b: 2});
    try { await fetch(PROBE_URL); show("fetch", "fetched"); } catch (e) { show("fetch", "blocked"); }
    notify("ui/notifications/size-changed", {width: 400, height: 321});
  }
});
request("ui/initialize", {appInfo: {name: "dashboard", version: "1"}, appCapabilities: {}, protocolVersion: "2026-01-26"})
  .then(r => { show("context", r.hostContext); notify("ui/notifications/initialized", {}); });
</script></body></html>
"""

BLOB = "<!doctype html><html><body><p>blob app: caf\u00e9</p></body></html>"


class AppsServer(MCPServer):
    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        contents = await super().read_resource(uri, context)
        if str(uri) != "ui://demo/override.html":
            return contents
        # The read's _meta.ui sets csp and prefersBorder; the list entry's domain still shows.
        read_meta = {"ui": {"csp": {"resourceDomains": ["https://read.example.com"]}, "prefersBorder": True}}
        return [ReadResourceContents(content="<p>override</p>", mime_type=APP_MIME_TYPE, meta=read_meta)]


apps = Apps()  # everything of the extension is registered before the server consumes it


@apps.tool(resource_uri="ui://demo/dashboard.html", description="Show a note on the dashboard")
def dashboard(note: str, ctx: Context) -> dict[str, Any]:
    return {"note": note, "apps": client_supports_apps(ctx)}


@apps.tool(resource_uri="ui://demo/dashboard.html", visibility=["app"], description="Refresh (app only)")
def refresh(n: int) -> str:
    return f"refreshed {n}"


@apps.tool(resource_uri="ui://demo/dashboard.html", visibility=["model"], description="For the model only")
def model_only() -> str:
    return "model only"


apps.add_html_resource(
    "ui://demo/dashboard.html",
    DASHBOARD.replace("PROBE_URL", repr(os.environ.get("APPS_PROBE_URL", "http://127.0.0.1:9/probe"))),
    csp=ResourceCsp(connect_domains=["https://api.example.com"], resource_domains=["https://cdn.example.com"]),
    permissions=ResourcePermissions(clipboard_write={}),
    prefers_border=True,
)
apps.add_resource(BinaryResource(uri="ui://demo/blob.html", name="blob", data=BLOB.encode()))
apps.add_resource(TextResource(
    uri="ui://demo/override.html", name="override", text="",
    meta={"ui": {"csp": {"connectDomains": ["https://list.example.com"]}, "domain": "list.example.com",
                 "prefersBorder": False}},
))
apps.add_html_resource("ui://demo/bad-csp.html", "<p>bad</p>", csp=ResourceCsp(connect_domains=[
    "*", "https://ok.example.com/", "'unsafe-eval'", "https://a.example.com; script-src *", "javascript:x"]))

mcp = AppsServer("apps-test-server", extensions=[apps])
mcp.add_resource(TextResource(uri="ui://demo/wrong.html", name="wrong", text="<p>", mime_type="text/html"))


@mcp.tool(meta={"ui/resourceUri": "ui://demo/blob.html"})
def flat() -> str:
    """A tool with the deprecated flat UI key."""
    return "flat"


@mcp.tool()
def plain(ctx: Context) -> str:
    """No UI; says whether the client advertised MCP Apps."""
    return f"apps={client_supports_apps(ctx)}"


def main() -> None:
    if "--http" not in sys.argv:
        mcp.run(transport="stdio")
        return
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT={sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(mcp.streamable_http_app(), log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
