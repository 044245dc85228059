"""An MCP Apps server for the examples, built with the official SDK (``pip install mcp``).

``show_counter`` carries a UI (``ui://counter/app.html``): a counter with a "+1" button,
which calls the app-only tool ``increment`` through the host.  Hosts that do not speak MCP
Apps get the text result only.  Run it over stdio: ``python examples/apps_server.py``;
``examples/flask_apps.py`` and ``examples/django_apps.py`` show it in a web page.
"""

from __future__ import annotations

from mcp.server.apps import Apps
from mcp.server.mcpserver import MCPServer

APP = """<!doctype html>
<html><head><meta charset="utf-8"><title>Counter</title>
<style>body { font: 16px system-ui, sans-serif; margin: 1rem; } output { font-size: 2rem; margin: 0 1rem; }</style>
</head><body>
<p><button id="plus" disabled>+1</button><output id="value">…</output><span id="status"></span></p>
<p><a href="https://modelcontextprotocol.io" id="docs">About MCP</a></p>
<script>
// The app speaks JSON-RPC with its host over postMessage (no SDK needed).
let next = 1;
const pending = {};
function request(method, params) {
  const id = next++;
  parent.postMessage({jsonrpc: "2.0", id, method, params}, "*");
  return new Promise((resolve, reject) => { pending[id] = {resolve, reject}; });
}
const value = document.getElementById("value");
const show = (result) => { value.textContent = result.structuredContent.value; };
window.addEventListener("message", (event) => {
  const m = event.data;
  if (event.source !== parent || !m) return;
  if (m.id !== undefined && !m.method) {
    const p = pending[m.id]; delete pending[m.id];
    if (p) { m.error ? p.reject(m.error) : p.resolve(m.result); }
  } else if (m.method === "ui/notifications/tool-result") {
    show(m.params);
    document.getElementById("plus").disabled = false;
  } else if (m.method === "ui/resource-teardown") {
    parent.postMessage({jsonrpc: "2.0", id: m.id, result: {}}, "*");
  }
});
document.getElementById("plus").onclick = async () => {
  try {
    show(await request("tools/call", {name: "increment", arguments: {value: Number(value.textContent)}}));
  } catch (e) { document.getElementById("status").textContent = e.message; }
};
document.getElementById("docs").onclick = (e) => { e.preventDefault(); request("ui/open-link", {url: e.target.href}); };
request("ui/initialize", {appInfo: {name: "counter", version: "1"}, appCapabilities: {}, protocolVersion: "2026-01-26"})
  .then(() => parent.postMessage({jsonrpc: "2.0", method: "ui/notifications/initialized", params: {}}, "*"));
new ResizeObserver(() => parent.postMessage({jsonrpc: "2.0", method: "ui/notifications/size-changed",
  params: {width: document.body.scrollWidth, height: document.body.offsetHeight + 32}}, "*")).observe(document.body);
</script></body></html>
"""

apps = Apps()


@apps.tool(resource_uri="ui://counter/app.html", description="Show a counter, starting at start")
def show_counter(start: int = 0) -> dict[str, int]:
    return {"value": start}


@apps.tool(resource_uri="ui://counter/app.html", visibility=["app"], description="Add one (the app's button)")
def increment(value: int) -> dict[str, int]:
    return {"value": value + 1}


apps.add_html_resource("ui://counter/app.html", APP, prefers_border=True)
mcp = MCPServer("counter", extensions=[apps])

if __name__ == "__main__":
    mcp.run(transport="stdio")
