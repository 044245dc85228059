"""The blocking, typed MCP client users call.

:class:`Client` is composed, not mixed: its connection over time is a
:class:`~mcpsync.client.lifecycle.Lifecycle`, its policies a
:class:`~mcpsync.client.policies.Policies`, its ``on()`` callbacks a
:class:`~mcpsync.client.listeners.Listeners`; every feature is a function over
:class:`~mcpsync.client.core.Core` (``tools``, ``resources``, ``prompts``, ``tasks``,
``skills``, ``apps``), bound here as a method.  Every request of every method goes
through one internal call, :meth:`Client._call`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcpsync import _fork, types
from mcpsync._version import __version__
from mcpsync.client import declared, prompts, resources, tools, utilities
from mcpsync.client.cache import ResultCache
from mcpsync.client.connection import Connection
from mcpsync.client.core import TaskWaiters, require
from mcpsync.client.extensions import ExtensionsArg, normalize_extensions
from mcpsync.client.input_required import until_complete
from mcpsync.client.interceptors import Interceptor
from mcpsync.client.lifecycle import Lifecycle
from mcpsync.client.listeners import Handle, Listeners
from mcpsync.client.on_first_use import on_first_use
from mcpsync.client.options import DEFAULT, ClientOptions, RootsArg, TimeoutArg
from mcpsync.client.pending_call import PendingCall
from mcpsync.client.policies import Policies
from mcpsync.client.retry import RetryArg, resolve_policy
from mcpsync.exceptions import McpError
from mcpsync.rpc.deadline import Deadline
from mcpsync.rpc.session import ProgressCallback
from mcpsync.transports.base import Transport

if TYPE_CHECKING:
    from mcpsync.client import apps, skills, tasks
    from mcpsync.config import ServerConfig

__all__ = ["Client", "Handle", "PendingCall"]

log = logging.getLogger(__name__)


class Client:
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
    :param roots: roots to offer the server: :class:`~mcpsync.types.Root`, ``(uri, name)``
        tuples or paths, or a callable returning them.
    :param sampling_handler: answers ``sampling/createMessage``.
    :param elicitation_handler: answers ``elicitation/create`` (form and URL mode).
    :param logging_handler: receives server log messages.
    :param exception_handler: receives exceptions raised by your callbacks.
    :param retry: retry transient failures of calls that are safe to repeat (``True``, the
        default), never (``False``), or as a :class:`~mcpsync.RetryPolicy` says; see
        ``docs/policies.rst``.
    :param interceptors: ``fn(request, call_next)`` functions run around every request and
        notification, the first outermost.
    :param tracing: OpenTelemetry spans and trace context in ``_meta`` when
        ``opentelemetry-api`` is installed; ``False`` turns them off.
    :param prior_discover: a :class:`~mcpsync.types.DiscoverResult` (or its wire dict)
        remembered from an earlier connection: the ``server/discover`` probe is skipped,
        and made once if the server rejects the remembered version.
    :param extensions: protocol extensions to advertise on every request, identifier ->
        settings (``None`` or ``{}``: no settings); see ``docs/extensions.rst``.
    :param apps: advertise MCP Apps (``io.modelcontextprotocol/ui``, HTML UIs) on every
        request; see ``docs/apps.rst``.
    :param serve_tasks: let a 2025-11-25 server run its sampling and elicitation requests as
        tasks on this client (see ``docs/tasks.rst``).
    :param session_retry: after an HTTP session expired and the client re-initialized, which
        refused request is resent: ``"safe"`` (all but ``tools/call``), ``"all"`` or ``"none"``.
    :param discover_timeout: with ``mode="auto"`` (or ``"modern"``), seconds the
        ``server/discover`` probe waits before an ``initialize`` goes out behind it; a
        handshake-era server that ignores the probe costs about this much (see
        :doc:`protocol-eras`).
    """

    def __init__(
        self,
        transport: Transport | None,
        *,
        client_info: tuple[str, str] = ("mcpsync", __version__),
        timeout: float | None = 30.0,
        mode: str = "auto",
        roots: RootsArg = None,
        sampling_handler: Callable[[types.CreateMessageRequestParams], types.CreateMessageResult] | None = None,
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
        session_retry: str = "safe",
        _transport_factory: Callable[[], Transport] | None = None,
        _prior_era: str | None = None,
    ) -> None:
        self._options = ClientOptions(
            client_info=client_info, timeout=timeout, mode=mode, roots=roots, sampling_handler=sampling_handler,
            elicitation_handler=elicitation_handler, logging_handler=logging_handler,
            exception_handler=exception_handler, capabilities=dict(capabilities) if capabilities else None,
            extensions=normalize_extensions({**(extensions or {}), **(_apps_settings() if apps else {})}) or None,
            serve_tasks=serve_tasks, max_queued_notifications=max_queued_notifications,
            discover_timeout=discover_timeout, prior_discover=_prior(prior_discover),
            prior_era=_prior_era,  # set by the CLI's era cache (mcpsync.client.era_cache)
            session_retry=session_retry,
        )
        self._tools: dict[str, types.Tool] = {}
        self._cache = ResultCache()
        self._resource_subscriptions: set[str] = set()
        self._background_lock = threading.Lock()
        self._task_waiters = TaskWaiters()
        self._listeners = Listeners()
        self._listeners.on_change = self._sync_background
        self._policies = Policies(
            self, lambda name: self._tools.get(name),
            lambda deadline: tools.list_tools(self, timeout=deadline, cache=False),
            retry=resolve_policy(retry), interceptors=interceptors, tracing=tracing, session_retry=session_retry,
        )
        self._life = Lifecycle(transport, _transport_factory, self._make_connection, self._connected,
                               self._task_waiters.wake_all)
        _fork.join(self)

    def after_fork_in_child(self) -> None:
        """In a forked child (:mod:`mcpsync._fork`): fresh locks for the cache, the listeners and
        the background stream (the parent's reader and dispatcher threads take them all the time)."""
        self._background_lock = threading.Lock()
        self._cache.after_fork()
        self._listeners.after_fork()

    @classmethod
    def stdio(cls, command: str | Sequence[str], *, args: Sequence[str] | None = None,
              env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None, stderr: Any = None,
              max_message_bytes: int = 32 * 1024 * 1024, close_grace: float = 2.0, terminate_grace: float = 2.0,
              write_timeout: float | None = 60.0, **options: Any) -> Client:
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
            return StdioTransport(command, args, env=env, cwd=cwd, stderr=stderr, max_message_bytes=max_message_bytes,
                                  close_grace=close_grace, terminate_grace=terminate_grace, write_timeout=write_timeout)

        return cls(factory(), _transport_factory=factory, **options)

    @classmethod
    def http(cls, url: str, *, auth: Any = None, headers: Mapping[str, str] | None = None, session: Any = None,
             transport: str = "auto", **options: Any) -> Client:
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

        factory, options = http_transport_factory(url, auth=auth, headers=headers, session=session, transport=transport,
                                                  options=options)
        return cls(factory(), _transport_factory=factory, **options)

    @classmethod
    def websocket(cls, url: str, *, headers: Mapping[str, str] | None = None, auth: Any = None,
                  **options: Any) -> Client:
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

        factory, options = websocket_transport_factory(url, headers=headers, auth=auth, options=options)
        return cls(factory(), _transport_factory=factory, **options)

    @classmethod
    def from_config(cls, path_or_dict: str | os.PathLike[str] | Mapping[str, Any], name: str, **options: Any) -> Client:
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

    # -- the connection ------------------------------------------------------

    def connect(self) -> Client:
        """Open the connection now (otherwise it opens on first use)."""
        self._connection()
        return self

    def close(self) -> None:
        """Close the connection; idempotent, callable from any thread, bounded in time.

        On return every server this client started (a failed connect's too) is gone.
        Called on a thread that is itself inside a call (a signal handler that
        interrupted it, an interceptor), it only starts the close on a thread of its own
        and returns: the interrupted frame may hold the locks a close needs.
        """
        self._life.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._life.closed

    @property
    def generation(self) -> int:
        """How many connections this client has opened in this process (a new one after a
        fork or after the server died); ``0`` before the first."""
        return self._life.generation

    def __enter__(self) -> Client:
        return self.connect()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def _conn(self) -> Connection | None:
        """The open connection, if any (for tests and debugging)."""
        return self._life.conn

    def _connection(self, deadline: Deadline | None = None) -> Connection:
        """The open connection, opening it first when needed: by *deadline* (a lazy connect is
        part of the call that made it) and by the client's default timeout, whichever is first."""
        conn = self._life.conn
        if conn is not None and conn.session._closed is None:
            return conn
        default = self._options.deadline(DEFAULT)
        if deadline is None or deadline.end is None or (default.end is not None and default.end < deadline.end):
            deadline = default
        return self._life.get(deadline)

    def _make_connection(self, transport: Transport) -> Connection:
        conn = Connection(transport, self._options, self._listeners, self._policies)
        conn.router.on_invalidate = self._cache.invalidate
        return conn

    def _connected(self, conn: Connection, deadline: Deadline) -> None:
        self._cache.clear()
        if conn.era == "modern" and (self._listeners.methods() or self._resource_subscriptions):
            try:
                self._sync_background(deadline)  # part of the connect, and of the call that made it
            except McpError as exc:  # notifications are best effort; calls must still work
                log.warning("could not open the notification stream: %s", exc)

    def _call(self, method: str, params: dict[str, Any] | None, deadline: Deadline, *,
              capability: str | None = None, progress: ProgressCallback | None = None,
              retry: bool | None = None, accept: tuple[str, ...] = (), rounds: bool = True) -> dict[str, Any]:
        """The one way every request of every method goes: the connection (opened by
        *deadline* when needed), the *capability* check, the policies, and (with *rounds*)
        the ``input_required`` rounds, all by one *deadline*.

        A result whose ``resultType`` is in *accept* (a task) is returned as it is.
        """
        conn = self._life.conn
        if conn is None or conn.session._closed is not None:
            conn = self._connection(deadline)
        if capability is not None:
            require(conn.capabilities, capability, method)
        policies = self._policies
        raw = policies.run(conn, method, params, deadline, progress=progress, retry=retry)
        kind = raw.get("resultType")
        if not rounds or kind is None or kind == "complete" or kind in accept:
            return raw

        def send(body: dict[str, Any]) -> dict[str, Any]:
            return policies.run(conn, method, body, deadline, progress=progress, retry=retry)

        return until_complete(send, conn, method, params or {}, deadline, accept, first=raw)

    # -- raw requests and notifications ----------------------------------------

    def request(self, method: str, params: Mapping[str, Any] | None = None, *, timeout: TimeoutArg = DEFAULT,
                progress: ProgressCallback | None = None, reset_timeout_on_progress: bool = True,
                max_total_timeout: float | None = None, retry: bool | None = None) -> dict[str, Any]:
        """Send any request and return the raw ``result`` object (the escape hatch).

        It goes through the client's interceptors, retries and tracing.

        :param retry: ``True`` allows retrying this request after a transient failure
            even if it may have run, ``False`` never retries it; by default only methods
            that are safe to repeat are retried.
        """
        deadline = self._options.deadline(timeout, max_total_timeout, reset_timeout_on_progress)
        return self._call(method, dict(params) if params is not None else None, deadline, progress=progress,
                          retry=retry, rounds=False)

    def request_async(self, method: str, params: Mapping[str, Any] | None = None, *,
                      progress: ProgressCallback | None = None) -> PendingCall:
        """Send a request and return at once; see :class:`PendingCall`."""
        deadline = self._options.deadline(DEFAULT)
        conn = self._connection(deadline)
        pending = conn.session.request(method, params, deadline, progress=progress, detach=True)
        return PendingCall(conn.session, pending, self._options)

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send any notification (through the interceptors)."""
        conn = self._connection()
        self._policies.notify(conn, method, dict(params) if params is not None else None)

    def on(self, method: str, callback: Callable[[dict[str, Any]], Any]) -> Handle:
        """Call ``callback(params)`` for each notification *method* (``"*"``: all).

        Callbacks run on the dispatcher thread, never the reader thread, in arrival
        order; they may call the client.  On a modern server, list-changed and
        resource-updated notifications need an open ``subscriptions/listen`` stream: the
        client keeps one open for the methods you registered here (and the URIs of
        :meth:`subscribe_resource`).
        """
        return self._listeners.add(method, callback)

    def _sync_background(self, deadline: Deadline | None = None) -> None:
        """Keep the background listen stream's filter in step with what is wanted, by the
        *deadline* of the call that changed it (``None``: ``on()``, the client's default)."""
        conn = self._life.conn
        if conn is not None and conn.era == "modern" and conn.alive:
            deadline = deadline or self._options.deadline(DEFAULT)
            # Another thread's update may wait for its ack by a longer deadline than ours.
            left = deadline.remaining()
            if not self._background_lock.acquire(timeout=-1 if left is None else left):
                raise deadline.expired("another thread's update of the notification stream did not finish",
                                       "subscriptions/listen")
            try:
                conn.sync_background(self._listeners.methods(), self._resource_subscriptions, deadline)
            finally:
                self._background_lock.release()

    # -- what the server declared, and the features: functions over core.Core ----

    server_info = property(declared.server_info)
    server_capabilities = property(declared.server_capabilities)
    protocol_version = property(declared.protocol_version)
    era = property(declared.era)
    discover_result = property(declared.discover_result)
    server_extensions = property(declared.server_extensions)
    instructions = property(declared.instructions)
    extension_meta = declared.extension_meta

    list_tools = tools.list_tools
    call_tool = tools.call_tool
    list_resources = resources.list_resources
    list_resource_templates = resources.list_resource_templates
    read_resource = resources.read_resource
    subscribe_resource = resources.subscribe_resource
    unsubscribe_resource = resources.unsubscribe_resource
    listen = resources.listen
    list_prompts = prompts.list_prompts
    get_prompt = prompts.get_prompt
    complete = utilities.complete
    ping = utilities.ping
    set_logging_level = utilities.set_logging_level
    notify_roots_changed = utilities.notify_roots_changed
    # Tasks, skills and apps: their modules load on first use (on_first_use.py says why).
    if TYPE_CHECKING:
        start_tool_task = tasks.start_tool_task
        task = tasks.task
        list_tasks = tasks.list_tasks
        list_skills = skills.list_skills
        get_skill = skills.get_skill
        load_skill = skills.load_skill
        read_skill_file = skills.read_skill_file
        read_app = apps.read_app
    else:
        start_tool_task = on_first_use("mcpsync.client.tasks", "start_tool_task")
        task = on_first_use("mcpsync.client.tasks", "task")
        list_tasks = on_first_use("mcpsync.client.tasks", "list_tasks")
        list_skills = on_first_use("mcpsync.client.skills", "list_skills")
        get_skill = on_first_use("mcpsync.client.skills", "get_skill")
        load_skill = on_first_use("mcpsync.client.skills", "load_skill")
        read_skill_file = on_first_use("mcpsync.client.skills", "read_skill_file")
        read_app = on_first_use("mcpsync.client.apps", "read_app")


def _apps_settings() -> dict[str, Any]:
    """The MCP Apps extension's settings this client advertises (``apps=True``)."""
    from mcpsync.client.apps import APPS_SETTINGS

    return APPS_SETTINGS


def _prior(value: types.DiscoverResult | Mapping[str, Any] | None) -> types.DiscoverResult | None:
    """``prior_discover=`` as a DiscoverResult (a saved wire dict is restored)."""
    if value is None or isinstance(value, types.DiscoverResult):
        return value
    if isinstance(value, Mapping):
        return types.from_wire(types.DiscoverResult, dict(value))
    raise TypeError(f"prior_discover must be a types.DiscoverResult or its wire dict, got {type(value).__name__}")
