"""Client options: the default-timeout sentinel, protocol versions, roots, capabilities."""

from __future__ import annotations

import enum
import os
from typing import Any, Callable, Iterable, Sequence, Union

import attrs

from mcpsync import types
from mcpsync.rpc.deadline import Deadline
from mcpsync.types.protocol import HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_VERSIONS

__all__ = ["DEFAULT", "Default", "TimeoutArg", "HANDSHAKE_VERSIONS", "LATEST_HANDSHAKE_VERSION", "MODERN_VERSIONS",
           "RootsArg", "normalize_roots", "ClientOptions"]


class Default(enum.Enum):
    """Type of :data:`DEFAULT`: "use the client's configured value"."""

    token = 0

    def __repr__(self) -> str:
        return "DEFAULT"


#: Pass (or leave) ``timeout=DEFAULT`` to use the client's default; ``None`` waits forever.
DEFAULT = Default.token

#: A call's ``timeout=``: seconds, ``None`` (no limit), :data:`DEFAULT`, or the
#: :class:`~mcpsync.rpc.deadline.Deadline` of a larger call this one is part of.
TimeoutArg = Union[float, None, Default, Deadline]

_RootItem = Union["types.Root", tuple[str, str], tuple[str], str, "os.PathLike[str]"]
#: What ``roots=`` accepts: a list of roots, or a callable returning one.
RootsArg = Union[Sequence[_RootItem], Callable[[], Iterable[_RootItem]], None]


def _root(item: _RootItem) -> types.Root:
    if isinstance(item, types.Root):
        return item
    if isinstance(item, tuple):
        uri = item[0]
        name = item[1] if len(item) > 1 else None
        return types.Root(_as_uri(uri), name=name)
    return types.Root(_as_uri(item))


def _as_uri(value: str | os.PathLike[str]) -> str:
    text = os.fspath(value)
    if "://" in text:
        return text
    from pathlib import Path  # only for roots given as paths: kept off the import path

    return Path(text).expanduser().resolve().as_uri()


def normalize_roots(roots: RootsArg) -> list[types.Root]:
    """Turn the ``roots=`` option into a list of :class:`~mcpsync.types.Root`.

    Paths become ``file://`` URIs; ``(uri, name)`` tuples keep their name.
    """
    if roots is None:
        return []
    items = roots() if callable(roots) else roots
    return [_root(item) for item in items]


def _check_mode(mode: str) -> None:
    """:raises ValueError: for a mode that is no era and no version we speak."""
    if mode not in ("auto", "legacy", "modern", *HANDSHAKE_VERSIONS, *MODERN_VERSIONS):
        raise ValueError(
            "mode must be 'auto', 'legacy', 'modern' or one of"
            f" {', '.join(MODERN_VERSIONS + HANDSHAKE_VERSIONS)}; got {mode!r}"
        )


@attrs.define(kw_only=True)
class ClientOptions:
    """Validated options shared by every way of constructing a client."""

    client_info: tuple[str, str]
    timeout: float | None = 30.0
    #: ``"auto"``, ``"legacy"``, ``"modern"`` or a protocol version (checked here: a bad
    #: mode fails when the client is made, not at first use).
    mode: str = attrs.field(default="auto", validator=lambda _options, _attribute, mode: _check_mode(mode))
    roots: RootsArg = None
    sampling_handler: Callable[[Any], Any] | None = None
    elicitation_handler: Callable[[Any], Any] | None = None
    logging_handler: Callable[[Any], Any] | None = None
    exception_handler: Callable[[BaseException], None] | None = None
    #: Extra client capabilities merged over the derived ones.
    capabilities: dict[str, Any] | None = None
    #: Extensions advertised on every request: identifier -> settings (SEP-2133).
    extensions: dict[str, dict[str, Any]] | None = None
    #: Run a handshake-era server's task-augmented sampling/elicitation requests as tasks.
    serve_tasks: bool = False
    #: Bound of the notification queue; beyond it notifications are dropped and counted.
    max_queued_notifications: int = 10_000
    #: Threads running server→client request handlers (sampling, elicitation, roots).
    handler_workers: int = 4
    #: Seconds the ``server/discover`` probe waits before a ``ping`` checks that the
    #: server reads at all (the probe itself waits up to the connect deadline).
    discover_timeout: float = 1.0
    #: Bound on ``input_required`` rounds of one modern request.
    max_input_rounds: int = 10
    #: A remembered ``server/discover`` result: the probe is skipped (see docs/policies.rst).
    prior_discover: types.DiscoverResult | None = None
    #: ``"legacy"``: the server took the handshake last time, so try it before any probe.
    prior_era: str | None = None
    #: After a re-initialize (an HTTP session expired), which refused request is resent:
    #: ``"safe"`` (all but ``tools/call``), ``"all"`` or ``"none"``.
    session_retry: str = attrs.field(default="safe", validator=attrs.validators.in_(("safe", "all", "none")))

    def deadline(self, timeout: TimeoutArg, max_total: float | None = None, reset_on_progress: bool = True) -> Deadline:
        """The deadline of a call that starts now (*timeout* :data:`DEFAULT`: the client's)."""
        if isinstance(timeout, Deadline):
            return timeout
        seconds = self.timeout if timeout is DEFAULT else timeout
        return Deadline(seconds, max_total, reset_on_progress=reset_on_progress)

    def offered_versions(self) -> tuple[str, ...]:
        """The handshake versions this client accepts, newest first."""
        if self.mode in HANDSHAKE_VERSIONS:
            return (self.mode,)
        return HANDSHAKE_VERSIONS

    def modern_versions(self) -> tuple[str, ...]:
        """The stateless-era versions to try; empty when the mode excludes that era."""
        if self.mode in ("auto", "modern"):
            return MODERN_VERSIONS
        if self.mode in MODERN_VERSIONS:
            return (self.mode,)
        return ()

    def allows_handshake(self) -> bool:
        """Whether the mode lets us fall back to (or start with) ``initialize``."""
        return self.mode in ("auto", "legacy") or self.mode in HANDSHAKE_VERSIONS

    def client_capabilities(self, *, modern: bool = False) -> dict[str, Any]:
        """Capabilities derived from the configured handlers (wire format)."""
        caps: dict[str, Any] = {}
        if self.roots is not None:
            # The modern era dropped roots/list_changed: the server asks each time.
            caps["roots"] = {} if modern else {"listChanged": True}
        if self.sampling_handler is not None:
            caps["sampling"] = {}
        if self.elicitation_handler is not None:
            caps["elicitation"] = {"form": {}, "url": {}}
        if self.extensions:
            caps["extensions"] = dict(self.extensions)
        if self.serve_tasks and not modern:
            from mcpsync.client.task_store import task_capabilities

            caps["tasks"] = task_capabilities(self.sampling_handler is not None, self.elicitation_handler is not None)
        for key, value in (self.capabilities or {}).items():
            caps[key] = value
        return caps
