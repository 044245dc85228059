"""The blocking, typed MCP client users call."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcpsync import _fork, types
from mcpsync._version import __version__
from mcpsync.client.apps import APPS_SETTINGS, Apps
from mcpsync.client.cache import ResultCache
from mcpsync.client.connection import Connection, Listeners
from mcpsync.client.handles import Handle, PendingCall
from mcpsync.client.extensions import ExtensionsArg, normalize_extensions, request_meta, server_extensions
from mcpsync.client.interceptors import Interceptor
from mcpsync.client.policies import Policies
from mcpsync.client.retry import RetryArg, resolve_policy
from mcpsync.client.skills import Skills
from mcpsync.client.options import DEFAULT, ClientOptions, Default, RootsArg, TimeoutArg
from mcpsync.client.subscriptions import Subscription
from mcpsync.client.tasks import TaskFeatures, TaskHandle, TaskWaiters
from mcpsync.exceptions import (
    ClientClosed,
    ForkedClientError,
    McpError,
    RequestTimeout,
)
from mcpsync.rpc.session import ProgressCallback, in_call
from mcpsync.transports.base import Transport

if TYPE_CHECKING:
    from mcpsync.config import ServerConfig

__all__ = ["Client", "Handle", "PendingCall", "TaskHandle"]

log = logging.getLogger(__name__)

#: How often a thread waiting for another thread's connect looks at close() and its deadline.
_CONNECT_POLL = 0.1


class Client(TaskFeatures, Skills, Apps):
    """A synchronous MCP client.

    A Client can be shared between threads; create it once per process.  The
    connection opens on first use (or :meth:`connect`); :meth:`close` is
    idempotent and bounded in time::

        with mcpsync.Client.stdio([sys.executable, "-m", "mcpsync.demo"]) as client:
            for tool in client.list_tools():
                print(tool.name)
            print(client.call_tool("add", {"a": 1, "b": 2}).text)

    :param transport: any :class:`~mcpsync.transports.base.Transport`.
    :param client_info: ``(name, version)`` sent to the server.
    :param timeout: default per-request timeout in seconds; ``None`` waits forever.
    :param mode: ``"auto"``, ``"legacy"`` or a protocol version to pin.
    :param roots: roots to offer the server: :class:`~mcpsync.types.Root`,
        ``(uri, name)`` tuples or paths, or a callable returning them.
    :param sampling_handler: answers ``sampling/createMessage``.
    :param elicitation_handler: answers ``elicitation/create`` (form and URL mode).
    :param logging_handler: receives server log messages.
    :param exception_handler: receives exceptions raised by your callbacks.
    :param retry: retry transient failures of calls that are safe to repeat
        (``True``, the default), never (``False``), or as a
        :class:`~mcpsync.RetryPolicy` says; see ``docs/policies.rst``.
    :param interceptors: ``fn(request, call_next)`` functions run around
        every request and notification, the first outermost.
    :param tracing: OpenTelemetry spans and trace context in ``_meta`` when
        ``opentelemetry-api`` is installed; ``False`` turns them off.
    :param prior_discover: a :class:`~mcpsync.types.DiscoverResult` (or its
        wire dict) remembered from an earlier connection: the
        ``server/discover`` probe is skipped, and made once if the server
        rejects the remembered version.
    :param extensions: protocol extensions to advertise on every request,
        identifier -> settings (``None`` or ``{}``: no settings); see ``docs/extensions.rst``.
    :param apps: advertise MCP Apps (``io.modelcontextprotocol/ui``, HTML UIs) on every
        request; see ``docs/apps.rst``.
    :param serve_tasks: let a 2025-11-25 server run its sampling and elicitation
        requests as tasks on this client (see ``docs/tasks.rst``).
    :param discover_timeout: with ``mode="auto"`` (or ``"modern"``), seconds
        the ``server/discover`` probe waits before a ``ping`` checks whether
        the server reads at all; a handshake-era server that ignores the probe
        costs about this much (see :doc:`protocol-eras`).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        client_info: tuple[str, str] = ("mcpsync", __version__),
        timeout: float | None = 30.0,
        mode: str = "auto",
        roots: RootsArg = None,
        sampling_handler: Callable[[types.CreateMessageRequestParams], types.CreateMessageResult]
        | None = None,
        elicitation_handler: Callable[[Any], types.ElicitResult] | None = None,
        logging_handler: Callable[[types.LoggingMessageNotificationParams], Any] | None = None,
        exception_handler: Callable[[BaseException], None] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        extensions: ExtensionsArg | None = None,
        apps: bool = False,
        serve_tasks: bool = False,
        max_queued_notifications: int = 10_000,
        retry: RetryArg = True,
        interceptors: Sequence[Interceptor] = (),
        tracing: bool = True,
        prior_discover: types.DiscoverResult | Mapping[str, Any] | None = None,
        discover_timeout: float = 1.0,
        _transport_factory: Callable[[], Transport] | None = None,
        _prior_era: str | None = None,
    ) -> None:
        self._options = ClientOptions(
            client_info=client_info,
            timeout=timeout,
            mode=mode,
            roots=roots,
            sampling_handler=sampling_handler,
            elicitation_handler=elicitation_handler,
            logging_handler=logging_handler,
            exception_handler=exception_handler,
            capabilities=dict(capabilities) if capabilities else None,
            extensions=normalize_extensions({**(extensions or {}), **(APPS_SETTINGS if apps else {})}) or None,
            serve_tasks=serve_tasks,
            max_queued_notifications=max_queued_notifications,
            discover_timeout=discover_timeout,
            prior_discover=_prior(prior_discover),
            prior_era=_prior_era,  # set by the CLI's era cache (mcpsync.client.era_cache)
        )
        self._policies = Policies(
            self, self._tool, retry=resolve_policy(retry), interceptors=interceptors, tracing=tracing
        )
        self._options.check_mode()  # a bad mode fails here, not at first use
        self._transport: Transport | None = transport
        self._factory = _transport_factory
        self._listeners = Listeners()
        self._connect_lock = threading.Lock()
        # Reentrant: close() from a signal handler may interrupt this thread holding it.
        self._state_lock = threading.RLock()
        self._conn: Connection | None = None
        self._connecting: Connection | None = None
        #: Connections whose connect failed, still being stopped on a thread of their own.
        self._discarded: list[Connection] = []
        self._closer: threading.Thread | None = None  # a close() started from a signal handler
        #: (pid, thread ident) of the thread running the handshake: thread idents are
        #: reused, and a forked child may get the ident of a parent thread that was connecting.
        self._connect_owner: tuple[int, int] | None = None
        self._closed = False
        self._tools: dict[str, types.Tool] = {}
        self._cache = ResultCache()
        self._resource_subscriptions: set[str] = set()
        self._background_lock = threading.Lock()
        self._listeners.on_change = self._sync_background
        self._task_waiters = TaskWaiters()
        _fork.join(self)

    def after_fork_in_child(self) -> None:
        """In a forked child: new locks, and no connect in progress (it was the parent's).

        Called by :mod:`mcpsync._fork`: a parent thread may have held these locks at the fork,
        in the middle of a connect, and no thread of the child would ever release them.

        The first connect in the child also clears the cache and reads the listeners, whose
        locks the parent's reader and dispatcher threads take all the time.
        """
        self._connect_lock = threading.Lock()
        self._state_lock = threading.RLock()
        self._background_lock = threading.Lock()
        self._cache.after_fork()
        self._listeners.after_fork()
        self._connecting, self._discarded = None, []

    @classmethod
    def stdio(
        cls,
        command: str | Sequence[str],
        *,
        args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: Any = None,
        max_message_bytes: int = 32 * 1024 * 1024,
        close_grace: float = 2.0,
        terminate_grace: float = 2.0,
        write_timeout: float | None = 60.0,
        **options: Any,
    ) -> Client:
        """A client for a server run as a subprocess speaking MCP over stdio.

        :param command: the program, or a list of program and arguments.
        :param env: merged over a safe default environment (not the whole of ours).
        :param stderr: where the server's stderr goes (default: the
            ``mcpsync.server`` logger); it is always drained.
        :param max_message_bytes: longest line accepted from the server.
        :param close_grace: seconds :meth:`close` waits after closing the
            server's stdin before SIGTERM; *terminate_grace* more before SIGKILL.
        :param write_timeout: bound on one write to a server that stopped reading.
        """
        from mcpsync.transports.stdio.transport import StdioTransport

        def factory() -> Transport:
            return StdioTransport(
                command,
                args,
                env=env,
                cwd=cwd,
                stderr=stderr,
                max_message_bytes=max_message_bytes,
                close_grace=close_grace,
                terminate_grace=terminate_grace,
                write_timeout=write_timeout,
            )

        return cls(factory(), _transport_factory=factory, **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        auth: Any = None,
        headers: Mapping[str, str] | None = None,
        session: Any = None,
        transport: str = "auto",
        **options: Any,
    ) -> Client:
        """A client for a server reached over HTTP.

        :param transport: ``"auto"`` (Streamable HTTP, falling back to legacy
            HTTP+SSE on the spec's signals), ``"streamable-http"`` or ``"sse"``.
        :param session: a ``requests.Session`` (proxies, TLS, retries); by
            default each connection makes its own.
        :param auth: a ``requests`` auth object, e.g. :class:`mcpsync.auth.OAuth`.

        Options the transports take (``read_timeout``, ``connect_timeout``,
        ``session_retry``, ...; see ``docs/transports.rst``) are split off from
        the client options.
        """
        from mcpsync.transports.http.factory import http_transport_factory

        factory, options = http_transport_factory(
            url, auth=auth, headers=headers, session=session, transport=transport, options=options
        )
        return cls(factory(), _transport_factory=factory, **options)

    @classmethod
    def websocket(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        **options: Any,
    ) -> Client:
        """A client for a server reached over a WebSocket (``ws://`` or ``wss://``).

        Needs ``pip install 'mcpsync[websocket]'``.  Transport options
        (``verify``, ``subprotocols``, ``connect_timeout``, ``write_timeout``,
        ``max_message_bytes``, ...; see
        :class:`~mcpsync.transports.websocket.transport.WebSocketTransport`) are split off
        from the client options.  A forked child opens its own connection.

        :param headers: extra headers for the upgrade request.
        :param auth: a ``requests`` auth object, e.g. ``mcpsync.auth.BearerToken``;
            the headers it sets go on the upgrade request, on every connect.
        """
        from mcpsync.transports.websocket.transport import websocket_transport_factory

        factory, options = websocket_transport_factory(
            url, headers=headers, auth=auth, options=options
        )
        return cls(factory(), _transport_factory=factory, **options)

    @classmethod
    def from_config(
        cls, path_or_dict: str | os.PathLike[str] | Mapping[str, Any], name: str, **options: Any
    ) -> Client:
        """A client for server *name* of an ``mcpServers`` JSON file or dict.

        The format of Claude Desktop, Cursor and VS Code; ``${VAR}``,
        ``${VAR:-default}`` and ``${env:VAR}`` are expanded (see
        :mod:`mcpsync.config`).  *options* go to :meth:`stdio`, :meth:`http`
        or :meth:`websocket`.

        :raises mcpsync.config.ConfigError: bad file or entry, unknown *name*,
            or an unset variable (also a ``ValueError``).
        """
        from mcpsync.config import load_config

        environ = options.pop("environ", None)
        return cls.from_server_config(load_config(path_or_dict, name, environ=environ)[name], **options)

    @classmethod
    def from_server_config(cls, entry: ServerConfig, **options: Any) -> Client:
        """A client for one entry parsed by :func:`mcpsync.config.load_config`.

        *options* go to :meth:`stdio`, :meth:`http` or :meth:`websocket`; the entry's own
        settings (:attr:`~mcpsync.config.ServerConfig.options`) apply unless *options* gives
        the same one, and ``headers=`` among them are merged over the entry's.
        """
        options = {**entry.options, **options}
        if entry.transport == "stdio":
            assert entry.command is not None
            return cls.stdio(entry.command, args=entry.args, env=entry.env, cwd=entry.cwd, **options)
        assert entry.url is not None
        headers = dict(entry.headers or {})
        headers.update(options.pop("headers", None) or {})
        if entry.transport == "websocket":
            return cls.websocket(entry.url, headers=headers or None, **options)
        return cls.http(entry.url, headers=headers or None, transport=entry.transport, **options)

    # -- lifecycle -----------------------------------------------------------

    def connect(self) -> Client:
        """Open the connection now (otherwise it opens on first use)."""
        self._connection()
        return self

    def _connection(self, deadline: float | None = None) -> Connection:
        """The open connection, opening it first (within *deadline*, if given) when needed."""
        conn = self._conn
        if conn is not None and conn.pid == os.getpid():
            return conn
        if self._connect_owner == (os.getpid(), threading.get_ident()):
            # An interceptor of the handshake asked for the connection it is making.
            raise McpError("the client is still connecting: an interceptor of the handshake called it")
        # One thread connects; the others wait here, each within its own deadline.
        # close() never takes this lock, so it can interrupt a slow handshake from
        # any thread, and it releases the waiters too.
        self._wait_for_connect_lock(deadline)
        try:
            return self._connect_holding(deadline)
        finally:
            self._connect_lock.release()

    def _wait_for_connect_lock(self, deadline: float | None) -> None:
        lock = self._connect_lock
        if lock.acquire(False):
            return
        started = time.monotonic()
        while True:
            if self._closed:
                raise ClientClosed("client is closed")
            wait = _CONNECT_POLL if deadline is None else min(_CONNECT_POLL, deadline - time.monotonic())
            if wait <= 0:
                elapsed = time.monotonic() - started
                raise RequestTimeout(
                    f"no connection within the call's timeout: another thread is still connecting"
                    f" (waited {elapsed:.3g}s)",
                    elapsed=elapsed,
                )
            if lock.acquire(True, wait):
                return

    def _connect_holding(self, deadline: float | None) -> Connection:
        with self._state_lock:
            if self._closed:
                raise ClientClosed("client is closed")
            conn = self._conn
            if conn is not None and conn.pid == os.getpid():
                return conn
            transport = self._next_transport(conn)
            conn = Connection(transport, self._options, self._listeners, self._policies)
            self._connecting = conn
        timeout = self._options.timeout
        if deadline is not None:
            # A lazy connect is part of the call that triggered it.
            left = max(0.0, deadline - time.monotonic())
            timeout = left if timeout is None else min(timeout, left)
        self._connect_owner = (os.getpid(), threading.get_ident())
        try:
            conn.open(timeout)
        except BaseException:
            with self._state_lock:  # close() waits for their servers to be gone
                self._discarded = [c for c in (*self._discarded, conn) if c.closing_in_background]
            raise
        finally:
            self._connect_owner = None
            with self._state_lock:
                self._connecting = None
        with self._state_lock:
            if self._closed:
                conn.close()
                raise ClientClosed("client was closed while connecting")
            self._cache.clear()
            conn.on_invalidate = self._cache.invalidate
            self._conn = conn
        if conn.era == "modern" and (self._listeners.methods() or self._resource_subscriptions):
            try:
                self._sync_background()
            except McpError as exc:  # notifications are best effort; calls must still work
                log.warning("could not open the notification stream: %s", exc)
        return conn

    def _next_transport(self, old: Connection | None) -> Transport:
        if old is not None:
            # Forked: the parent's pipes, sockets and threads are not ours.
            old.abandon()
            self._conn = None
            if self._factory is None:
                raise ForkedClientError(
                    "this client was connected before os.fork(); create a new Client in"
                    " the child process (or construct it with Client.stdio/Client.http,"
                    " which reconnect by themselves)"
                )
            self._transport = None
        transport = self._transport
        self._transport = None
        if transport is None:
            if self._factory is None:
                raise ClientClosed("client has no transport")
            transport = self._factory()
        return transport

    def close(self) -> None:
        """Close the connection; idempotent, callable from any thread, bounded in time.

        On return every server this client started (a failed connect's too) is gone.
        Called on a thread that is itself inside a call (a signal handler that
        interrupted it, an interceptor), it only starts the close on a thread of its
        own and returns: the interrupted frame may hold the locks a close needs.
        A later ``close()`` elsewhere waits for that thread.
        """
        deferred = in_call()
        with self._state_lock:
            closed, self._closed = self._closed, True
            conns = [c for c in (self._conn, self._connecting, *self._discarded) if c is not None]
            self._conn, self._discarded = None, []
            transport, self._transport = self._transport, None
            if deferred and not closed:
                self._closer = threading.Thread(target=self._close_all, args=(conns, transport),
                                                name="mcpsync-close", daemon=True)
            closer = self._closer
        if closed:  # wait for a close a signal handler started (it is bounded); not at finalization
            if closer and closer is not threading.current_thread() and not (deferred or sys.is_finalizing()):
                closer.join()
            return
        if deferred and closer is not None:
            try:
                closer.start()
                return
            except RuntimeError:  # no new threads (interpreter exiting): close here
                self._closer = None
        self._close_all(conns, transport)

    def _close_all(self, conns: list[Connection], transport: Transport | None) -> None:
        self._task_waiters.wake_all()
        for conn in conns:
            if conn.pid == os.getpid():
                conn.close()
        if transport is not None:
            transport.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> Client:
        return self.connect()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- what the server declared --------------------------------------------

    @property
    def server_info(self) -> types.Implementation:
        """The server's name, version and title (connects if needed).

        A modern server may leave it out of ``server/discover``: then
        ``name`` and ``version`` are empty strings.
        """
        return self._connection().server_info

    @property
    def server_capabilities(self) -> types.ServerCapabilities:
        """What the server declared it supports (connects if needed)."""
        return self._connection().capabilities

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol revision, e.g. ``"2026-07-28"`` or ``"2025-11-25"``."""
        return self._connection().protocol_version

    @property
    def era(self) -> str:
        """``"modern"`` (stateless, 2026-07-28) or ``"legacy"`` (initialize handshake)."""
        return self._connection().era

    @property
    def discover_result(self) -> types.DiscoverResult | None:
        """The ``server/discover`` result of a 2026-07-28 server, else ``None``.

        Save it with :func:`mcpsync.types.to_wire` and hand it back (restored
        with :func:`~mcpsync.types.from_wire`) as ``prior_discover=`` to skip
        the probe next time.
        """
        return self._connection().discover_result

    @property
    def server_extensions(self) -> dict[str, dict[str, Any]]:
        """The extensions the server declared: identifier -> settings (connects if needed)."""
        return server_extensions(self._connection().capabilities)

    def extension_meta(self, extensions: ExtensionsArg) -> dict[str, Any]:
        """``_meta`` that declares *extensions* (identifier -> settings) on one request.

        Pass it as ``meta=`` (or as ``params["_meta"]`` of :meth:`request`); it
        carries the client's other capabilities too.  Empty on a handshake-era
        server, where ``initialize`` fixed the capabilities for the session.
        """
        return request_meta(self._connection(), extensions)

    @property
    def instructions(self) -> str | None:
        """The server's usage instructions, if it sent any."""
        return self._connection().instructions

    # -- raw requests --------------------------------------------------------

    def _tool(self, name: str) -> types.Tool | None:
        """The tool *name* as last listed (``None``: not listed)."""
        return self._tools.get(name)

    def _timeout(self, timeout: TimeoutArg) -> float | None:
        return self._options.timeout if isinstance(timeout, Default) else timeout

    def request_async(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> PendingCall:
        """Send a request and return at once; see :class:`PendingCall`."""
        conn = self._connection()
        pending = conn.session.send_request(method, params, on_progress=progress, detach=True)
        return PendingCall(conn, pending, self._options.timeout)

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: TimeoutArg = DEFAULT,
        progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = True,
        max_total_timeout: float | None = None,
        retry: bool | None = None,
    ) -> dict[str, Any]:
        """Send any request and return the raw ``result`` object (the escape hatch).

        It goes through the client's interceptors, retries and tracing.

        :param retry: ``True`` allows retrying this request after a transient
            failure even if it may have run, ``False`` never retries it; by
            default only methods that are safe to repeat are retried.
        """
        # The deadline is fixed now and bounds everything below, a lazy connect included.
        seconds = self._timeout(timeout)
        started = time.monotonic()
        deadline = None if seconds is None else started + seconds
        if max_total_timeout is not None:
            cap = started + max_total_timeout
            deadline = cap if deadline is None else min(deadline, cap)
        conn = self._connection(deadline)
        # Straight to the policies (Connection.request is this call for other callers); the
        # time the connect took counts, as both limits run from *started*.
        return conn.policies.request(
            conn,
            method,
            dict(params) if params is not None else None,
            timeout=seconds,
            progress=progress,
            reset_on_progress=reset_timeout_on_progress,
            max_total=max_total_timeout,
            retry=retry,
            start=started,
        )

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send any notification (through the interceptors)."""
        self._connection().notify(method, dict(params) if params is not None else None)

    def on(self, method: str, callback: Callable[[dict[str, Any]], Any]) -> Handle:
        """Call ``callback(params)`` for each notification *method* (``"*"``: all).

        Callbacks run on the dispatcher thread, never the reader thread, in
        arrival order; they may call the client.  On a modern server,
        list-changed and resource-updated notifications need an open
        ``subscriptions/listen`` stream: the client keeps one open for the
        methods you registered here (and the URIs of :meth:`subscribe_resource`).
        """
        self._listeners.add(method, callback)
        return Handle(self._listeners, method, callback)

    def _sync_background(self) -> None:
        """Keep the background listen stream's filter in step with what is wanted."""
        conn = self._conn
        if conn is None or conn.era != "modern" or conn.pid != os.getpid():
            return
        with self._background_lock:
            methods = self._listeners.methods()
            every = "*" in methods
            filt = types.SubscriptionFilter(
                tools_list_changed=every or "notifications/tools/list_changed" in methods or None,
                prompts_list_changed=every or "notifications/prompts/list_changed" in methods or None,
                resources_list_changed=every or "notifications/resources/list_changed" in methods or None,
                resource_subscriptions=sorted(self._resource_subscriptions) or None,
            )
            old = conn.background
            if old is not None and not old.closed and old.filter == filt:
                return
            new: Subscription | None = None
            if filt != types.SubscriptionFilter():
                new = Subscription(filt, on_close=conn.remove_subscription, queue_notifications=False)
                conn.background = new
                conn.listen(new, self._options.timeout)
            else:
                conn.background = None
            if old is not None:
                old.close()


def _prior(value: types.DiscoverResult | Mapping[str, Any] | None) -> types.DiscoverResult | None:
    """``prior_discover=`` as a DiscoverResult (a saved wire dict is restored)."""
    if value is None or isinstance(value, types.DiscoverResult):
        return value
    if isinstance(value, Mapping):
        return types.from_wire(types.DiscoverResult, dict(value))
    raise TypeError(f"prior_discover must be a types.DiscoverResult or its wire dict, got {type(value).__name__}")
