"""A raw-socket HTTP/1.1 server for fault injection, in a thread (requests' test-server style).

The test supplies ``handler(request, conn)``; ``request`` has ``method``, ``path``, ``headers``
(lower-cased keys) and ``body`` (parsed JSON when it is JSON); ``conn`` writes raw bytes, so a
test can send any status, any body, a stream that ends early, trickles or never ends.  Every
request is recorded in ``server.requests``.  ``stop()`` shuts every socket down and joins every
thread; use the server as a context manager.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any


class Request:
    def __init__(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.raw = raw
        self.time = time.monotonic()
        try:
            self.body: Any = json.loads(raw) if raw else None
        except ValueError:
            self.body = None

    @property
    def rpc_method(self) -> str | None:
        return self.body.get("method") if isinstance(self.body, dict) else None

    def __repr__(self) -> str:
        return f"<{self.method} {self.path} {self.rpc_method}>"


class Conn:
    """The response side of one connection."""

    def __init__(self, sock: socket.socket, server: FaultServer) -> None:
        self.sock = sock
        self.server = server

    def send(self, data: bytes | str) -> None:
        self.sock.sendall(data.encode() if isinstance(data, str) else data)

    def respond(self, status: int, body: bytes | str | Any = b"", *, ctype: str = "application/json",
                headers: dict[str, str] | None = None) -> None:
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        data = body.encode() if isinstance(body, str) else body
        lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(data)}"]
        if data or ctype != "application/json":
            lines.append(f"Content-Type: {ctype}")
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.send("\r\n".join(lines).encode() + b"\r\n\r\n" + data)

    def start_sse(self, headers: dict[str, str] | None = None, *, chunked: bool = True) -> None:
        lines = ["HTTP/1.1 200 OK", "Content-Type: text/event-stream"]
        lines.append("Transfer-Encoding: chunked" if chunked else "Connection: close")
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.chunked = chunked
        self.send("\r\n".join(lines).encode() + b"\r\n\r\n")

    def event(self, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        if getattr(self, "chunked", True):
            raw = f"{len(raw):x}\r\n".encode() + raw + b"\r\n"
        self.send(raw)

    def message(self, obj: Any, event_id: str | None = None) -> None:
        text = (f"id: {event_id}\n" if event_id else "") + f"data: {json.dumps(obj)}\n\n"
        self.event(text)

    def end(self) -> None:
        if getattr(self, "chunked", True):
            self.send(b"0\r\n\r\n")

    def reset(self) -> None:
        """Drop the connection without answering: a TCP reset (``SO_LINGER`` 0), as a crashing server."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def hold(self, timeout: float = 30.0) -> None:
        """Keep the connection open until the server stops (a stream that never ends)."""
        self.server.stopping.wait(timeout)


Handler = Callable[[Request, Conn], None]


class FaultServer:
    def __init__(self, handler: Handler, host: str = "127.0.0.1", *, port: int = 0, listen: bool = True) -> None:
        """:param listen: ``False`` binds the port but refuses connections until :meth:`listen`."""
        self.handler = handler
        self.requests: list[Request] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, port))
        self.host = host
        self.port = self._listener.getsockname()[1]
        if listen:
            self.listen()

    def listen(self) -> None:
        """Start accepting connections (a bound socket that does not listen refuses them)."""
        self._listener.listen(64)
        self._spawn(self._accept)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="fault-http")
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._socks.append(sock)
            self._spawn(self._serve, sock)

    def _serve(self, sock: socket.socket) -> None:
        buf = b""
        try:
            while not self.stopping.is_set():
                while b"\r\n\r\n" not in buf:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    key, _, value = line.partition(":")
                    headers[key.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                while len(buf) < length:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                body, buf = buf[:length], buf[length:]
                request = Request(method, path, headers, body)
                with self._lock:
                    self.requests.append(request)
                self.handler(request, Conn(sock, self))
        except OSError:
            return
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def rpc(self, method: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.rpc_method == method]

    def stop(self) -> None:
        self.stopping.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in accept()
        except OSError:
            pass
        try:
            self._listener.close()
        except OSError:
            pass
        with self._lock:
            socks = list(self._socks)
            threads = list(self._threads)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in threads:
            thread.join(timeout=5)

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def init_result(request: Request, version: str = "2025-11-25") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.body["id"], "result": {
        "protocolVersion": version, "capabilities": {"tools": {}},
        "serverInfo": {"name": "fault", "version": "0"}}}


#: What the official SDK's handshake-era Streamable HTTP server (stateful) answers to a
#: 2026-07-28 request: it carries no session id, so 400 with a body that is not a modern error.
LEGACY_PROBE_BODY = {"jsonrpc": "2.0", "id": None,
                     "error": {"code": -32600, "message": "Bad Request: Missing session ID"}}


def legacy_probe_answer(conn: Conn) -> None:
    conn.respond(400, LEGACY_PROBE_BODY)


def discover_result(request: Request, *, versions: tuple[str, ...] = ("2026-07-28",)) -> dict[str, Any]:
    """A 2026-07-28 ``server/discover`` reply."""
    return {"jsonrpc": "2.0", "id": request.body["id"], "result": {
        "supportedVersions": list(versions), "capabilities": {"tools": {"listChanged": True}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-fault", "version": "0"}}}}


def handshake(request: Request, conn: Conn, *, session: str | None = "s1") -> bool:
    """Answer initialize / initialized / GET 405; return True when the request was handled."""
    headers = {"Mcp-Session-Id": session} if session else {}
    if request.method == "GET":
        conn.respond(405, b"", ctype="text/plain")
    elif request.method == "DELETE":
        conn.respond(200, b"", ctype="text/plain")
    elif request.rpc_method == "server/discover":
        legacy_probe_answer(conn)
    elif request.rpc_method == "initialize":
        conn.respond(200, init_result(request), headers=headers)
    elif request.body is not None and "id" not in request.body:
        conn.respond(202, b"", ctype="text/plain")
    else:
        return False
    return True
