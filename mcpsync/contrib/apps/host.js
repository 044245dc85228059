// The MCP Apps host bridge (docs/apps.rst): this page's end of the JSON-RPC over postMessage
// with the app, which runs in the sandbox iframe on another origin.  Its tools/call requests
// go to this site (CSRF token, same-origin cookies), which calls the server as the user.
(function () {
  "use strict";
  const cfg = JSON.parse(document.getElementById("mcp-app-config").textContent);
  const frame = document.getElementById("mcp-app-frame");
  const pending = new Map();  // ids of the host's own requests -> what to do with the answer
  let initialized = false;
  let nextId = 1;
  const app = window.mcpApp = {log: [], teardown: teardown};

  function send(message) {
    if (frame.isConnected && frame.contentWindow) frame.contentWindow.postMessage(message, cfg.sandboxOrigin);
  }
  const reply = (id, result) => send({jsonrpc: "2.0", id: id, result: result});
  const fail = (id, code, message) => send({jsonrpc: "2.0", id: id, error: {code: code, message: message}});
  const notify = (method, params) => send({jsonrpc: "2.0", method: method, params: params});

  async function callTool(id, params) {
    params = params || {};
    let body;
    try {
      const response = await fetch(cfg.callUrl, {
        method: "POST", credentials: "same-origin", redirect: "error",
        headers: {"Content-Type": "application/json", [cfg.csrfHeader]: cfg.csrfToken},
        body: JSON.stringify({name: params.name, arguments: params.arguments || {}}),
      });
      body = await response.json();
    } catch (e) {
      return fail(id, -32603, "the host could not reach the MCP server");
    }
    if (body.error) fail(id, body.error.code, body.error.message); else reply(id, body);
  }

  function openLink(id, url) {
    let ok = false;
    try { ok = ["http:", "https:"].includes(new URL(url).protocol); } catch (e) { ok = false; }
    if (!ok) return fail(id, -32602, "the host opens http and https links only");
    window.open(url, "_blank", "noopener,noreferrer");
    reply(id, {});
  }

  function context() {
    return {
      toolInfo: {tool: cfg.tool}, displayMode: "inline", availableDisplayModes: ["inline"],
      theme: window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light",
      containerDimensions: {width: frame.clientWidth, maxHeight: cfg.maxHeight},
      locale: navigator.language, timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: cfg.hostInfo.name + "/" + cfg.hostInfo.version, platform: "web",
    };
  }

  const handlers = {
    "ui/notifications/sandbox-proxy-ready": () => notify("ui/notifications/sandbox-resource-ready",
      {html: cfg.html, csp: cfg.csp, permissions: cfg.permissions}),
    "ui/initialize": (m) => reply(m.id, {
      protocolVersion: "2026-01-26", hostInfo: cfg.hostInfo, hostContext: context(),
      hostCapabilities: {openLinks: {}, serverTools: {}, logging: {}, sandbox: {csp: cfg.csp, permissions: cfg.permissions}},
    }),
    "ui/notifications/initialized": () => {
      if (initialized) return;
      initialized = true;  // nothing goes to the app before this
      notify("ui/notifications/tool-input", {arguments: cfg.arguments});
      if (cfg.result) notify("ui/notifications/tool-result", cfg.result);
      else notify("ui/notifications/tool-cancelled", {reason: cfg.cancelled});
    },
    "tools/call": (m) => callTool(m.id, m.params),
    "ui/notifications/size-changed": (m) => {
      const height = Number((m.params || {}).height);
      if (height > 0) frame.style.height = Math.min(Math.ceil(height), cfg.maxHeight) + "px";
    },
    "ui/open-link": (m) => openLink(m.id, (m.params || {}).url),
    "ui/request-display-mode": (m) => reply(m.id, {mode: "inline"}),
    "ping": (m) => reply(m.id, {}),
    "notifications/message": (m) => { app.log.push(m.params); console.info("MCP app:", m.params); },
  };

  window.addEventListener("message", (event) => {
    if (event.source !== frame.contentWindow || event.origin !== cfg.sandboxOrigin) return;
    const m = event.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (typeof m.method !== "string") {  // an answer to one of the host's requests
      const done = pending.get(m.id);
      if (done) done();
      return;
    }
    const handle = Object.prototype.hasOwnProperty.call(handlers, m.method) ? handlers[m.method] : null;
    if (handle) handle(m);
    else if (m.id !== undefined) fail(m.id, -32601, "this host does not support " + m.method);
  });

  // ui/resource-teardown; the frame goes when the app has answered, or after 3 s.
  function teardown(reason) {
    return new Promise((resolve) => {
      const id = "teardown-" + nextId++;
      const finish = () => { pending.delete(id); frame.remove(); resolve(); };
      pending.set(id, finish);
      if (initialized) send({jsonrpc: "2.0", id: id, method: "ui/resource-teardown", params: {reason: reason}});
      else finish();
      setTimeout(() => { if (pending.has(id)) finish(); }, 3000);
    });
  }
  const close = document.getElementById("mcp-app-close");
  if (close) close.addEventListener("click", () => teardown("closed by the user").then(() => close.remove()));
  window.addEventListener("pagehide", () => {
    if (initialized) send({jsonrpc: "2.0", id: "teardown-page", method: "ui/resource-teardown", params: {reason: "page closed"}});
  });
})();
