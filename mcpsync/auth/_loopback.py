"""The loopback redirect receiver for scripts and CLIs (RFC 8252 §7.3).

Modelled on MSAL's ``AuthCodeReceiver``, minus its faults: it binds the
literal ``127.0.0.1`` (not ``localhost``, which may resolve elsewhere) on an
ephemeral port, keeps serving until the real callback arrives (a favicon
request or a forged callback with a wrong ``state`` does not end the login),
HTML-escapes everything it echoes, never logs the query string, runs in a
named daemon thread so Ctrl+C and the timeout work, and always closes.

Each connection is served on a thread of its own with a read timeout
(:data:`CONNECTION_TIMEOUT`), at most :data:`MAX_CONNECTIONS` at once: an idle
connection (a browser's speculative preconnect, or another local program's)
cannot hold up the real callback.  Closing the receiver shuts every open
connection, so no handler thread outlives it.
"""

from __future__ import annotations

import contextlib
import html
import http.server
import logging
import socket
import socketserver
import sys
import threading
import webbrowser
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import attrs

from ._errors import LoginCancelled, LoginTimeout
from ._login import query_params, same_secret


log = logging.getLogger("mcpsync.auth")

#: Seconds a connection may take to send its request before it is dropped.
CONNECTION_TIMEOUT = 10.0
#: Connections served at once; more are closed at once.
MAX_CONNECTIONS = 32

_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head>
<body style="font-family: sans-serif; margin: 3em"><h1>{title}</h1><p>{body}</p></body></html>"""


class _Handler(http.server.BaseHTTPRequestHandler):
    server: LoopbackReceiver
    timeout = CONNECTION_TIMEOUT

    def do_GET(self) -> None:
        receiver = self.server
        if urlsplit(self.path).path != receiver.path:
            self._reply(404, "Not found", "This is not the login callback.")
            return
        params = query_params(self.path)
        if not same_secret(params.get("state"), receiver.state):
            # A stray or forged request: refuse it and keep waiting for the real one.
            self._reply(400, "Login failed", "The login response does not belong to the login in progress.")
            return
        if "error" in params:
            said = f"{params['error']} {params.get('error_description', '')}"  # escaped and cut by _reply
            self._reply(400, "Login failed", f"The authorization server said: {said}")
        else:
            self._reply(200, "Logged in", receiver.success_text)
        receiver.deliver(params)

    def _reply(self, status: int, title: str, body: str) -> None:
        page = _PAGE.format(title=html.escape(title), body=html.escape(body[:500])).encode("utf-8")
        self.send_response(status)
        for name, value in (("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(page))),
                            ("Cache-Control", "no-store"), ("Referrer-Policy", "no-referrer")):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request line carries the code: never log it


class LoopbackReceiver(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """One bound loopback listener, for one login, serving on a thread of its own.  Use as a
    context manager."""

    # Windows lets a second socket bind a port in use when this is on.
    allow_reuse_address = sys.platform != "win32"
    daemon_threads = True

    def __init__(self, login: LoopbackLogin, port: int) -> None:
        self.path, self.success_text = login.path, login.success_text
        self.state: str | None = None
        self._result: dict[str, str] | None = None
        self._done = threading.Event()
        #: The connections being served (at most MAX_CONNECTIONS), so that closing ends them.
        self._open: set[socket.socket] = set()
        self._guard = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="mcpsync-auth-loopback", daemon=True)
        self._thread.start()

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.server_port}{self.path}"

    def verify_request(self, request: Any, client_address: Any) -> bool:
        # Refused (over MAX_CONNECTIONS): socketserver calls shutdown_request, which forgets it again.
        with self._guard:
            self._open.add(request)
            return len(self._open) <= MAX_CONNECTIONS

    def shutdown_request(self, request: Any) -> None:
        with self._guard:
            self._open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Not socketserver's traceback on stderr: a dropped connection is no news.
        log.debug("a loopback connection failed (%s)", type(sys.exc_info()[1]).__name__)

    def deliver(self, params: dict[str, str]) -> None:
        if not self._done.is_set():
            self._result = params
            self._done.set()

    def wait(self, state: str, timeout: float | None) -> dict[str, str]:
        """Block until the callback for *state* arrives; its query parameters."""
        self.state = state  # normally set already, before the browser was opened
        if not self._done.wait(timeout):
            raise LoginTimeout(f"no login response within {timeout:.0f} s")
        if self._result is None:
            raise LoginCancelled("the login was cancelled")
        return self._result

    def close(self) -> None:
        """Stop serving and end every connection still open (its handler thread then ends too)."""
        self._done.set()
        self.shutdown()
        with self._guard:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.server_close()
        self._thread.join(5.0)

    def __exit__(self, *exc: object) -> None:
        self.close()


@attrs.define(kw_only=True, eq=False)
class LoopbackLogin:
    """Log in through the user's browser and a redirect to 127.0.0.1 (scripts, CLIs, desktop apps).

    :param open_browser: called with the authorization URL; the default
        ``webbrowser.open``.  When it returns ``False`` (no browser) or raises,
        the URL is printed to stderr for the user to open by hand.  Tests pass a
        function that follows the URL with ``requests``.
    :param timeout: seconds to wait for the user (:class:`~mcpsync.auth.LoginTimeout`).
    :param port: 0 (default) for an ephemeral port.
    """

    open_browser: Callable[[str], Any] = attrs.field(default=webbrowser.open, repr=False)
    timeout: float = 300.0
    port: int = 0
    path: str = "/callback"
    success_text: str = attrs.field(default="You are logged in. You can close this window.", repr=False)

    def receiver(self, preferred_port: int | None = None) -> LoopbackReceiver:
        """Bind a listener: *preferred_port* (a registered redirect) if free, else :attr:`port`."""
        if preferred_port:
            with contextlib.suppress(OSError):
                return LoopbackReceiver(self, preferred_port)
        return LoopbackReceiver(self, self.port)

    def open(self, url: str) -> None:
        """Show *url* to the user: the browser, or stderr when none opens."""
        try:
            opened = self.open_browser(url)
        except Exception as exc:  # noqa: BLE001 -  # a broken browser launcher must not end the login
            log.warning("could not open a browser (%s)", type(exc).__name__)
            opened = False
        if opened is False:
            print(f"Open this URL in a browser to log in:\n\n    {url}\n", file=sys.stderr, flush=True)
