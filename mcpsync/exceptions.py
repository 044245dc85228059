"""Every exception mcpsync raises, in one tree.

::

    McpError                              base of everything below; never raised bare
    ├── ServerError(code, message, data)  a JSON-RPC error response (our own secrets masked)
    │   ├── ParseError                    -32700
    │   ├── InvalidRequest                -32600
    │   ├── MethodNotFound                -32601
    │   ├── InvalidParams                 -32602
    │   │   └── TaskNotFound              no such task (unknown id, or expired)
    │   ├── InternalError                 -32603
    │   ├── ResourceNotFound              -32002
    │   ├── UrlElicitationRequired        -32042
    │   ├── MissingClientCapability       -32021 (``required``: what to declare)
    │   ├── TaskFailed                    a task ended with a JSON-RPC error (``task``)
    │   └── ServerUnsupportedProtocolVersion  -32022 (also an UnsupportedProtocolVersion)
    ├── TransportError                    the connection failed; cause chained
    │   ├── ConnectionClosed              transport died (exit code, stderr tail)
    │   │   ├── ServerStartError          the server could not be started / exited early
    │   │   ├── ClientClosed              the client was closed (by you)
    │   │   ├── MessageTooLarge           a frame exceeded ``max_message_bytes``
    │   │   └── WebSocketClosed           the WebSocket closed (code, reason)   [transports.websocket]
    │   ├── HTTPStatusError               non-2xx HTTP reply (status, redacted excerpt)
    │   │   ├── SessionExpired            the HTTP session was lost for good
    │   │   └── HTTPAuthError             401/403 no auth handler resolved (also an AuthError)
    │   └── ForkedClientError             a stdio client used in a forked child
    ├── RequestTimeout                    also a builtin ``TimeoutError``
    ├── RequestCancelled                  the call was cancelled locally
    │   └── TaskCancelled                 a task ended cancelled (``task``)
    ├── ProtocolError                     the peer broke JSON-RPC / MCP rules
    │   └── SkillVerificationError        a skill file failed its digest/size/frontmatter check
    ├── CapabilityNotSupported            the server did not declare the capability
    ├── UnsupportedProtocolVersion        no protocol version both sides speak
    ├── ToolError                         ``CallToolResult.raise_for_error()``
    ├── UnknownName                       no such tool/prompt/resource/server (a ``KeyError``) [group]
    ├── ProviderResponseError             an LLM response :mod:`mcpsync.llm` cannot read     [llm]
    ├── AppResourceError                  not an MCP Apps UI resource (``ui://``, its mimeType)
    ├── ToolNotVisible                    ``call_tool(caller=...)``: the tool's visibility lacks it
    ├── ConfigError                       a bad ``mcpServers`` file or entry (also ``ValueError``) [config]
    │   ├── UnsetVariableError            ``${VAR}`` with no value and no default            [config]
    │   ├── UsageError                    bad command-line arguments                         [cli]
    │   └── ServerSetError                ``MCP_SERVERS`` settings with errors (all listed)  [contrib]
    ├── FallbackToLegacy                  internal: "auto" HTTP switches to HTTP+SSE; never reaches you
    └── AuthError                         base of the :mod:`mcpsync.auth` errors              [auth]
        ├── HTTPAuthError                 a 401/403 no auth handler resolved (also an HTTPStatusError)
        ├── AuthorizationRequired         a login is needed; ``.url`` is where to send the user
        ├── LoginTimeout                  the loopback login timed out (also ``TimeoutError``)
        ├── LoginCancelled                the user refused or closed the login
        ├── TokenStoreError               the token store failed
        │   └── InsecureTokenStoreError   a store that would keep secrets readable by others
        ├── DiscoveryError                metadata discovery failed
        │   ├── ResourceMismatchError     the resource metadata names another server
        │   ├── PKCENotSupportedError     the authorization server does not do S256 PKCE
        │   └── SSRFBlockedError          a discovered URL the URL policy refuses
        ├── IssuerMismatchError           ``iss`` or a pre-registered client's issuer does not match
        ├── UnboundServerError            a server an ``OAuth`` bound to another one asked for a login
        ├── RegistrationError             dynamic client registration failed
        ├── TokenRequestError             the token endpoint refused (``.error``)
        ├── StateMismatchError            a callback whose ``state`` is not ours
        ├── CallbackError                 a callback with an error or without a code
        ├── DPoPError                     DPoP cannot be done (no ES256 key support, no extra)
        │   └── DPoPNonceError            a server kept demanding new DPoP nonces
        └── NotLoggedIn                   the CLI has no token for this server               [cli]

Classes marked ``[package]`` are defined in that package (``mcpsync.auth``,
``mcpsync.config``, ...) and exported from there; the rest are defined here.  Every class
of this module, ``[group]`` and ``[llm]`` are exported from :mod:`mcpsync` too.

A tool result with ``isError: true`` is *data*, not an exception: call
``result.raise_for_error()`` to opt into :class:`ToolError`.

Exception messages never contain credentials; excerpts of peer data are
truncated (see :func:`excerpt`).  A server that echoes a credential we sent it (an
access token) in a JSON-RPC error gets it masked (:func:`remember_secret`).
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

__all__ = ["McpError", "ServerError", "ParseError", "InvalidRequest", "MethodNotFound", "InvalidParams",
           "InternalError", "ResourceNotFound", "UrlElicitationRequired", "MissingClientCapability", "TaskNotFound",
           "TaskFailed", "TaskCancelled", "ServerUnsupportedProtocolVersion", "TransportError", "ConnectionClosed",
           "ServerStartError", "ClientClosed", "MessageTooLarge", "HTTPStatusError", "SessionExpired",
           "ForkedClientError", "RequestTimeout", "RequestCancelled", "ProtocolError", "SkillVerificationError",
           "CapabilityNotSupported", "UnsupportedProtocolVersion", "ToolError", "AppResourceError", "ToolNotVisible",
           "AuthError", "HTTPAuthError"]

_EXCERPT_LIMIT = 200

# Credentials this process sent to servers (the auth handlers remember them), newest
# last; the oldest are forgotten past _MAX_SECRETS.
_SECRETS: dict[str, None] = {}
_SECRETS_LOCK = threading.Lock()
_MAX_SECRETS = 256
_MASK = "[redacted]"


def remember_secret(value: str) -> None:
    """Mask *value* (a token sent to a server) wherever a server's error echoes it."""
    if len(value) < 8:
        return  # too short to mask without mangling ordinary text
    with _SECRETS_LOCK:
        _SECRETS.pop(value, None)
        _SECRETS[value] = None
        while len(_SECRETS) > _MAX_SECRETS:
            del _SECRETS[next(iter(_SECRETS))]


def _masked(text: str) -> str:
    if _SECRETS:
        with _SECRETS_LOCK:
            found = [secret for secret in _SECRETS if secret in text]
        for secret in sorted(found, key=len, reverse=True):  # a secret may contain another
            text = text.replace(secret, _MASK)
    return text


def mask_secrets(value: Any) -> Any:
    """*value* (server text, or JSON: strings in lists and objects) with remembered secrets masked."""
    if isinstance(value, str):
        return _masked(value)
    if isinstance(value, list):
        return [mask_secrets(item) for item in value]
    if isinstance(value, dict):
        return {mask_secrets(k): mask_secrets(v) for k, v in value.items()}
    return value


def excerpt(value: object, limit: int = _EXCERPT_LIMIT) -> str:
    """Return a short, single-line ``repr``-ish excerpt of untrusted peer data (our secrets masked)."""
    if isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace")
    else:
        text = value if isinstance(value, str) else repr(value)
    text = _masked(text).replace("\r", "\\r").replace("\n", "\\n")
    if len(text) > limit:
        return text[:limit] + f"... ({len(text) - limit} more chars)"
    return text


class McpError(Exception):
    """Base class of every exception raised by mcpsync."""


#: JSON-RPC error code -> its class (each ``class X(ServerError, code=...)`` adds itself).
_CODES: dict[int, type[ServerError]] = {}


class ServerError(McpError):
    """The server answered a request with a JSON-RPC error.

    ``code``, ``message`` and ``data`` are kept as the server sent them, but
    for the credentials we sent it, masked (:func:`remember_secret`); only
    ``str()`` truncates.
    """

    #: The JSON-RPC error code this class stands for (``None`` on the base).
    CODE: ClassVar[int | None] = None

    def __init_subclass__(cls, code: int | None = None, **kwargs: Any) -> None:
        # ``class ParseError(ServerError, code=-32700)``: the class of that code.
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.CODE = code
            _CODES[code] = cls

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        # Not super(): with multiple inheritance (ServerUnsupportedProtocolVersion)
        # the next class in the MRO takes different arguments.
        Exception.__init__(self, code, message, data)
        #: The JSON-RPC error code.
        self.code = code
        #: The error message, verbatim.
        self.message = message
        #: The optional ``data`` member, verbatim.
        self.data = data

    def __str__(self) -> str:
        return f"[{self.code}] {excerpt(self.message, 500)}"


class ParseError(ServerError, code=-32700):
    """The server could not parse what we sent (-32700)."""


class InvalidRequest(ServerError, code=-32600):
    """The server found our request invalid (-32600)."""


class MethodNotFound(ServerError, code=-32601):
    """The server does not implement the method (-32601)."""


class InvalidParams(ServerError, code=-32602):
    """The server rejected the parameters (-32602)."""


class InternalError(ServerError, code=-32603):
    """The server failed internally (-32603)."""


class ResourceNotFound(ServerError, code=-32002):
    """The resource does not exist (-32002)."""


class UrlElicitationRequired(ServerError, code=-32042):
    """The server needs the user to visit a URL first (-32042)."""


class MissingClientCapability(ServerError, code=-32021):
    """The server needs a capability (often an extension) the request did not declare.

    :ivar required: the ``requiredCapabilities`` object the server named (may be empty).
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        required = data.get("requiredCapabilities") if isinstance(data, dict) else None
        self.required: dict[str, Any] = required if isinstance(required, dict) else {}


class TaskNotFound(InvalidParams):
    """The server knows no task with this id (it never had it, or the task expired).

    :ivar task_id: the id asked about.
    """

    def __init__(self, code: int, message: str, data: Any = None, *, task_id: str = "") -> None:
        super().__init__(code, message, data)
        self.task_id = task_id

    def __str__(self) -> str:
        # Only a prefix: a task id may be a bearer credential for the task (SEP-2663).
        shown = self.task_id if len(self.task_id) <= 8 else self.task_id[:6] + "..."
        return f"task {shown!r} not found: {super().__str__()}"


class TaskFailed(ServerError):
    """A task ended ``failed``: its JSON-RPC error, as the call itself would have raised it.

    :ivar task: the task's last state (:class:`mcpsync.types.DetailedTask`).
    """

    def __init__(self, code: int, message: str, data: Any = None, *, task: Any = None) -> None:
        super().__init__(code, message, data)
        self.task = task


class UnsupportedProtocolVersion(McpError):
    """Client and server share no protocol version.

    :ivar requested: the version the client asked for (or ``None``).
    :ivar supported: the versions the other side says it supports.
    """

    def __init__(self, message: str, *, requested: str | None = None, supported: list[str] | None = None) -> None:
        super().__init__(message)
        self.requested, self.supported = requested, list(supported or [])


class ServerUnsupportedProtocolVersion(ServerError, UnsupportedProtocolVersion, code=-32022):
    """The server answered -32022: it does not speak the requested version."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        ServerError.__init__(self, code, message, data)
        raw, requested = (data.get("supported"), data.get("requested")) if isinstance(data, dict) else (None, None)
        self.supported = [v for v in raw if isinstance(v, str)] if isinstance(raw, list) else []
        self.requested = requested if isinstance(requested, str) else None


def error_from_response(error: dict[str, Any]) -> ServerError:
    """Build the most specific :class:`ServerError` for a JSON-RPC ``error`` member.

    The caller has already checked that ``code`` is an int and ``message`` a str.
    """
    code = error["code"]
    cls = _CODES.get(code, ServerError)
    # A server may echo the token it was sent (an error about it): never pass it on.
    return cls(code, mask_secrets(error["message"]), mask_secrets(error.get("data")))


class TransportError(McpError):
    """The transport failed; the original exception is chained as ``__cause__``."""


class ConnectionClosed(TransportError):
    """The connection to the server is gone.

    Every call pending when the connection dies fails with this at once.

    :ivar exit_code: a stdio server's exit status (negative: killed by that
        signal), or ``None``.
    :ivar stderr_tail: the first and last lines the stdio server wrote
        to stderr (untrusted text, truncated), or ``""``.
    :ivar outcome_unknown: ``True`` when the request may have reached the
        server before the connection died.
    """

    def __init__(self, message: str = "connection closed", *, exit_code: int | None = None, stderr_tail: str = "",
                 outcome_unknown: bool = False) -> None:
        super().__init__(message)
        self.message, self.exit_code, self.stderr_tail = message, exit_code, stderr_tail
        self.outcome_unknown = outcome_unknown

    def __str__(self) -> str:
        code = "" if self.exit_code is None else f" (exit code {self.exit_code})"
        return self.message + code + ("; server stderr:\n" + self.stderr_tail if self.stderr_tail else "")


class ServerStartError(ConnectionClosed):
    """The server could not be started, or exited before the handshake ended."""


class ClientClosed(ConnectionClosed):
    """The client was closed; calls pending at that moment fail with this."""


class MessageTooLarge(ConnectionClosed):
    """A message exceeded the configured ``max_message_bytes``.

    The connection is closed: the reply that was too large cannot be matched to
    its caller, so every pending call fails with this.
    """


class HTTPStatusError(TransportError):
    """The server answered an HTTP request with a non-success status.

    :ivar status: the HTTP status code.
    :ivar body_excerpt: the start of the body (redacted, truncated).
    :ivar retry_after: seconds from ``Retry-After``, if given.
    """

    def __init__(self, status: int, message: str = "", *, body_excerpt: str = "",
                 retry_after: float | None = None) -> None:
        super().__init__(status, message)
        self.status, self.message, self.body_excerpt, self.retry_after = status, message, body_excerpt, retry_after

    def __str__(self) -> str:
        return f"HTTP {self.status}" + (f": {self.message}" if self.message else "") + (
            f" ({self.body_excerpt})" if self.body_excerpt else "")


class SessionExpired(HTTPStatusError):
    """The HTTP session expired and could not be re-established safely."""


class ForkedClientError(TransportError):
    """A client whose connection cannot cross ``fork()`` was used in the child."""


class RequestTimeout(McpError, TimeoutError):
    """A request got no reply in time; ``notifications/cancelled`` was sent.

    :ivar method: the request's method.
    :ivar elapsed: seconds since the request was sent.
    """

    def __init__(self, message: str, *, method: str = "", elapsed: float = 0.0) -> None:
        super().__init__(message)
        self.method, self.elapsed = method, elapsed


class RequestCancelled(McpError):
    """The request was cancelled locally before its reply arrived."""


class TaskCancelled(RequestCancelled):
    """A task ended ``cancelled`` (by :meth:`TaskHandle.cancel`, or by the server).

    :ivar task: the task's last state (:class:`mcpsync.types.DetailedTask`).
    """

    def __init__(self, message: str, *, task: Any = None) -> None:
        super().__init__(message)
        self.task = task


class ProtocolError(McpError):
    """The peer sent something that breaks JSON-RPC or MCP."""


class SkillVerificationError(ProtocolError):
    """A skill file did not match the server's own entry for it; its content was discarded.

    Raised by :meth:`mcpsync.Client.load_skill` and :meth:`~mcpsync.Client.read_skill_file`
    (the skills extension, SEP-2640) before any of the content reaches the caller.

    :ivar uri: the file that failed.
    :ivar check: ``"digest"``, ``"size"``, ``"frontmatter"`` or ``"content"`` (not a
        text/blob the checks can apply to).
    :ivar expected: what the skill entry declared (a digest, a byte count, a field value).
    :ivar actual: what the read produced, in the same form (never the content itself).
    """

    def __init__(self, uri: str, check: str, expected: object = None, actual: object = None, detail: str = "") -> None:
        message = f"skill file {excerpt(uri, 120)} failed {check} verification"
        if detail or expected is not None or actual is not None:
            message += f": {detail}" if detail else f" (expected {excerpt(expected, 80)}, got {excerpt(actual, 80)})"
        super().__init__(message)
        self.uri, self.check, self.expected, self.actual = uri, check, expected, actual


class CapabilityNotSupported(McpError):
    """The server did not declare the capability this call needs; nothing was sent.

    :ivar capability: the missing capability, e.g. ``"resources.subscribe"``.
    """

    def __init__(self, capability: str, method: str = "") -> None:
        super().__init__(f"server does not declare the {capability!r} capability"
                         + (f" needed by {method!r}" if method else ""))
        self.capability, self.method = capability, method


class ToolError(McpError):
    """A tool call returned ``isError: true`` and :meth:`raise_for_error` was called.

    :ivar result: the :class:`mcpsync.types.CallToolResult`.
    """

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class AppResourceError(McpError):
    """A URI that is not ``ui://``, or content that is not an MCP Apps UI resource
    (``text/html;profile=mcp-app``, text or base64 blob); see :meth:`mcpsync.Client.read_app`."""


class ToolNotVisible(McpError):
    """``call_tool(..., caller="app"|"model")`` for a tool the server does not list, or whose
    ``_meta.ui.visibility`` lacks the caller; nothing was sent to the server.

    :ivar name: the tool's name.
    :ivar caller: ``"app"`` or ``"model"``.
    """

    def __init__(self, name: str, caller: str, detail: str) -> None:
        super().__init__(f"tool {excerpt(name, 120)!r} is not for the {caller}: {detail}")
        self.name, self.caller = name, caller


class AuthError(McpError):
    """Base class of authorization failures (see :mod:`mcpsync.auth`)."""


class HTTPAuthError(HTTPStatusError, AuthError):
    """A 401 or 403 that no auth handler resolved (HTTP and WebSocket upgrades alike).

    Raised when no ``auth=`` was given, when a 401 carries no
    ``WWW-Authenticate`` challenge to act on, or when a WebSocket upgrade is
    refused with 401/403.  It is both an :class:`HTTPStatusError` (``status``
    and the redacted ``body_excerpt`` are kept) and an :class:`AuthError`, so
    ``except AuthError`` catches every authorization failure.
    """
