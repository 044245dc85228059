"""An in-test TCP proxy that can cut every connection on demand (an idle-timeout intermediary).

Stands for the load balancer or reverse proxy (nginx 60 s, Cloudflare 100 s, Azure 230 s) that
drops a long POST/SSE connection while the server behind it is still working.  The test cuts
with :meth:`CutProxy.cut` when the server signals it is busy, so nothing waits on a clock.
"""

from __future__ import annotations

import socket
import threading


class CutProxy:
    def __init__(self, target_port: int, host: str = "127.0.0.1", *, cut_after: bytes | None = None) -> None:
        """:param cut_after: cut every connection once these bytes were forwarded to the client."""
        self.target = (host, target_port)
        self.cut_after = cut_after
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._all: list[socket.socket] = []  # closed at stop, cut or not
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._listener = socket.socket()
        self._listener.bind((host, 0))
        self._listener.listen(64)
        self.url = f"http://{host}:{self._listener.getsockname()[1]}"
        self._spawn(self._accept)

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="cut-proxy")  # type: ignore[arg-type]
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._socks += [client, upstream]
                self._all += [client, upstream]
            self._spawn(self._pipe, client, upstream, False)
            self._spawn(self._pipe, upstream, client, True)

    def _pipe(self, src: socket.socket, dst: socket.socket, to_client: bool) -> None:
        marker = self.cut_after if to_client else None
        tail = b""  # the marker may straddle two reads
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
                if marker is not None:
                    tail = (tail + data)[-(len(marker) + len(data)):]
                    if marker in tail:
                        self.cut()
                        return
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Drop every connection open now (both sides see a reset/EOF); new ones still work."""
        with self._lock:
            socks, self._socks = self._socks, []
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        self._stopping.set()
        for action in (lambda: self._listener.shutdown(socket.SHUT_RDWR), self._listener.close):
            try:
                action()
            except OSError:
                pass
        self.cut()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=5)
        with self._lock:
            socks = list(self._all)
        for sock in socks:
            sock.close()

    def __enter__(self) -> CutProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
