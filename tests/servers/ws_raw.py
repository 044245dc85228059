"""A hand-made WebSocket peer for faults no real server produces on request.

:class:`RawServer` accepts one connection on 127.0.0.1, completes the upgrade (selecting the
``mcp`` subprotocol), then runs a test-supplied script on the raw socket: stop reading, send a
frame header announcing 10 GB, send an oversized control frame, and so on.  It runs on a thread
of the test process and :meth:`RawServer.stop` ends it within a bounded time.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import threading
from collections.abc import Callable

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

Script = Callable[[socket.socket, threading.Event], None]


class RawServer:
    """One-connection WebSocket server whose behaviour after the upgrade is ``script``."""

    def __init__(self, script: Script) -> None:
        self._script = script
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(10.0)
        self.port = self._listener.getsockname()[1]
        self.stopping = threading.Event()
        self.request_headers: dict[str, str] = {}
        self.received = bytearray()
        self._thread = threading.Thread(target=self._run, name="test-ws-raw", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/mcp"

    def _run(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(10.0)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                self.request_headers[name.strip().lower()] = value.strip()
            key = self.request_headers.get("sec-websocket-key", "")
            accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
            conn.sendall(
                (
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n"
                    "Sec-WebSocket-Protocol: mcp\r\n\r\n"
                ).encode()
            )
            try:
                self._script(conn, self.stopping)
            except OSError:
                pass

    def read_some(self, conn: socket.socket) -> None:
        """Read whatever the client sends until it closes or :meth:`stop` is called.

        Bytes already in the socket are read even once :meth:`stop` is called: a
        test may call it the moment the client closed, before this thread ran.
        """
        conn.settimeout(0.1)
        while True:
            if self.stopping.is_set():
                conn.settimeout(0.0)  # from now on, only what is already there
            try:
                chunk = conn.recv(65536)
            except (TimeoutError, BlockingIOError):
                if self.stopping.is_set():
                    return
                continue
            if not chunk:
                return
            self.received += chunk

    def stop(self) -> None:
        self.stopping.set()
        self._listener.close()
        self._thread.join(15.0)
        assert not self._thread.is_alive(), "raw WebSocket server did not stop"
