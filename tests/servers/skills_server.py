"""A real HTTP MCP server for the skills extension (SEP-2640), serving skill directories from disk.

Stdlib only (``http.server``), on 127.0.0.1 port 0, in a thread.  It speaks the
2026-07-28 stateless wire (``server/discover``, per-request ``_meta``) and the
handshake era (``initialize``), and serves:

* ``skills/list`` (paginated, ``page_size`` entries a page) and ``skills/get``:
  entries built from the files on disk, digests and sizes computed from the
  bytes, frontmatter read with PyYAML as a typical Python server does;
* ``resources/read`` of every file of every skill (text for UTF-8 files, blob
  otherwise).

Test hooks: ``tamper`` (URI -> bytes served instead of the file, after the
manifest was computed), ``entry_overrides`` (URI -> fields replaced in the
entry), ``dynamic`` (skill URIs published with ``"resources": "dynamic"``),
``hidden`` (skills answered by ``skills/get`` but left out of the listing),
``extra_entries`` (raw entries appended to the listing) and ``stall`` (URIs whose
read opens an SSE stream at once and answers only when the server stops).  ``requests`` records every
JSON-RPC message received.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

MODERN = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/skills"


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class SkillsServer:
    def __init__(self, root: Path, *, page_size: int = 2, declare: bool = True) -> None:
        self.root = root
        self.page_size = page_size
        self.declare = declare
        self.tamper: dict[str, bytes] = {}
        self.entry_overrides: dict[str, dict[str, Any]] = {}
        self.dynamic: set[str] = set()
        self.hidden: set[str] = set()
        self.extra_entries: list[Any] = []
        self.stall: set[str] = set()
        self.requests: list[dict[str, Any]] = []
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._send(405, b"")

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with owner._lock:
                    owner.requests.append(body)
                if "id" not in body:
                    self._send(202, b"")
                    return
                if body.get("method") == "resources/read" and body["params"].get("uri") in owner.stall:
                    self._stall_stream(body)
                    return
                status, reply = owner.answer(body)
                self._send(status, json.dumps(reply).encode())

            def _stall_stream(self, body: dict[str, Any]) -> None:
                """An SSE response that starts at once and answers only when the server stops."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b": working\n\n")
                self.wfile.flush()
                owner._stopping.wait(30)
                _, reply = owner.answer(body)
                self.wfile.write(b"data: " + json.dumps(reply).encode() + b"\n\n")
                self.close_connection = True

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                if data:
                    self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(data)

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, name="skills-http", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/mcp"

    def stop(self) -> None:
        self._stopping.set()
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)

    def __enter__(self) -> SkillsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def sent(self, method: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r.get("method") == method]

    def reads(self) -> list[str]:
        return [r["params"]["uri"] for r in self.sent("resources/read")]

    # -- the skills on disk ------------------------------------------------------------------

    def skill_dirs(self) -> list[Path]:
        return sorted(path.parent for path in self.root.rglob("SKILL.md"))

    def uri(self, path: Path) -> str:
        return "skill://" + path.relative_to(self.root).as_posix()

    def entry(self, directory: Path) -> dict[str, Any]:
        uri = self.uri(directory / "SKILL.md")
        # A hostile server's entry need not come from its file (entry_overrides).
        frontmatter = self.entry_overrides.get(uri, {}).get("frontmatter") or yaml.safe_load(
            (directory / "SKILL.md").read_text(encoding="utf-8").split("---\n")[1])
        files = sorted(p for p in directory.rglob("*") if p.is_file())
        resources: Any = [{"uri": self.uri(p), "digest": digest(p.read_bytes()), "size": p.stat().st_size}
                          for p in files]
        entry = {"uri": uri, "frontmatter": frontmatter, "resources": "dynamic" if uri in self.dynamic else resources}
        entry.update(self.entry_overrides.get(uri, {}))
        return entry

    # -- JSON-RPC ------------------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {"resources": {}}
        if self.declare:
            caps["extensions"] = {EXTENSION: {}}
        return caps

    def answer(self, message: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        method, params, rid = message.get("method"), message.get("params") or {}, message["id"]

        def ok(result: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            return 200, {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **result}}

        def error(code: int, text: str, status: int = 200) -> tuple[int, dict[str, Any]]:
            return status, {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}}

        if method == "server/discover":
            return ok({"supportedVersions": [MODERN], "capabilities": self.capabilities(),
                       "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "skills", "version": "1"}}})
        if method == "initialize":
            return 200, {"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": params["protocolVersion"], "capabilities": self.capabilities(),
                "serverInfo": {"name": "skills", "version": "1"}}}
        if method == "skills/list":
            entries = [self.entry(d) for d in self.skill_dirs()]
            entries = [e for e in entries if e["uri"] not in self.hidden] + list(self.extra_entries)
            start = int(params.get("cursor") or 0)
            page = entries[start:start + self.page_size]
            result: dict[str, Any] = {"skills": page, "ttlMs": 0, "cacheScope": "private"}
            if start + self.page_size < len(entries):
                result["nextCursor"] = str(start + self.page_size)
            return ok(result)
        if method == "skills/get":
            for directory in self.skill_dirs():
                if self.uri(directory / "SKILL.md") == params.get("uri"):
                    return ok({"skill": self.entry(directory), "ttlMs": 0, "cacheScope": "private"})
            return error(-32602, "Unknown skill")
        if method == "resources/read":
            uri = params.get("uri", "")
            path = self.root / uri.removeprefix("skill://")
            if not uri.startswith("skill://") or not path.is_file():
                return error(-32602, "Unknown resource")
            data = self.tamper.get(uri, path.read_bytes())
            try:
                item: dict[str, Any] = {"uri": uri, "mimeType": "text/markdown", "text": data.decode("utf-8")}
            except UnicodeDecodeError:
                item = {"uri": uri, "mimeType": "application/octet-stream", "blob": base64.b64encode(data).decode()}
            return ok({"contents": [item]})
        return error(-32601, "Method not found", 404)
