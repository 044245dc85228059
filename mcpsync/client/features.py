"""The MCP feature methods of :class:`mcpsync.Client`, the same in both eras.

Kept apart from the connection plumbing in :mod:`mcpsync.client.client`; the
:class:`Features` mixin relies only on ``request``, ``_connection`` and the
attributes documented at its top.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from mcpsync import types
from mcpsync.client.apps import check_caller
from mcpsync.client.cache import ResultCache
from mcpsync.client.input_required import request_until_complete
from mcpsync.client.options import DEFAULT, ClientOptions, TimeoutArg
from mcpsync.client.output_schema import check_structured_content
from mcpsync.client.subscriptions import Subscription
from mcpsync.client.task_handle import TaskClient, follow_task
from mcpsync.exceptions import CapabilityNotSupported, ProtocolError
from mcpsync.rpc.session import ProgressCallback

if TYPE_CHECKING:
    from mcpsync.client.connection import Connection

__all__ = ["Features"]

_MAX_PAGES = 10_000


class Features:
    """Tools, resources, prompts, completion, logging, roots and subscriptions."""

    _options: ClientOptions
    _tools: dict[str, types.Tool]
    _cache: ResultCache
    _resource_subscriptions: set[str]

    if TYPE_CHECKING:
        # Provided by Client; declared for the type checker only.
        request: Callable[..., dict[str, Any]]
        _conn: Connection | None

        def _connection(self, deadline: float | None = None) -> Connection: ...

        def _timeout(self, timeout: TimeoutArg) -> float | None: ...

        def _sync_background(self) -> None: ...

    # -- plumbing shared by the feature methods ------------------------------

    def _deadline(self, timeout: TimeoutArg) -> float | None:
        """When a call that starts now must end (``None``: never)."""
        seconds = self._timeout(timeout)
        return None if seconds is None else time.monotonic() + seconds

    @staticmethod
    def _left(deadline: float | None) -> float | None:
        """The seconds left until *deadline*, as the ``timeout=`` of the call's next request."""
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def _require(self, capability: str, method: str, timeout: TimeoutArg = DEFAULT) -> float | None:
        """Raise :class:`CapabilityNotSupported` unless the server declared *capability*.

        A lazy connect here is part of the call, inside its deadline: what is left of
        *timeout* for the request is returned (``None``: no limit).
        """
        deadline = self._deadline(timeout)
        caps = self._connection(deadline).capabilities
        head, _, sub = capability.partition(".")
        value = getattr(caps, head, None)
        if value is not None and sub:
            value = getattr(value, sub, None) if not isinstance(value, dict) else value.get(sub)
        if value is None or value is False:
            raise CapabilityNotSupported(capability, method)
        return self._left(deadline)

    def _request_until_complete(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg = DEFAULT,
        progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = True,
        max_total_timeout: float | None = None,
        retry: bool | None = None,
        accept: tuple[str, ...] = (),
        first: dict[str, Any] | None = None,
        started: float | None = None,
    ) -> dict[str, Any]:
        """Send a request and return its complete result, answering ``input_required`` rounds
        (see :func:`mcpsync.client.input_required.request_until_complete`)."""
        return request_until_complete(
            self.request,
            self._connection,
            method,
            params,
            max_rounds=self._options.max_input_rounds,
            timeout=self._timeout(timeout),
            progress=progress,
            reset_timeout_on_progress=reset_timeout_on_progress,
            max_total_timeout=max_total_timeout,
            retry=retry,
            accept=accept,
            first=first,
            started=started,
        )

    def _paginate(
        self, method: str, key: str, cls: type[Any], capability: str, timeout: TimeoutArg, cache: bool
    ) -> list[Any]:
        # One deadline for every page: a list of many pages ends by the caller's timeout too.
        left = self._require(capability, method, timeout)
        deadline = None if left is None else time.monotonic() + left
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(_MAX_PAGES):
            raw = self._cache.get(method, cursor) if cache else None
            if raw is None:
                generation = self._cache.generation
                raw = self.request(method, {"cursor": cursor} if cursor is not None else None,
                                   timeout=self._left(deadline))
                self._cache.put(method, cursor, raw, generation)
            page = types.from_wire(cls, raw)
            items.extend(getattr(page, key))
            cursor = page.next_cursor
            if cursor is None:
                return items
            if cursor in seen:
                raise ProtocolError(f"{method}: server repeated pagination cursor {cursor[:80]!r}")
            seen.add(cursor)
        raise ProtocolError(f"{method}: more than {_MAX_PAGES} pages")

    # -- tools ---------------------------------------------------------------

    def list_tools(self, *, timeout: TimeoutArg = DEFAULT, cache: bool = True) -> list[types.Tool]:
        """All tools the server offers (every page).

        :param cache: reuse a result the server marked cacheable (``ttlMs``);
            ``False`` always asks the server.
        """
        tools: list[types.Tool] = self._paginate(
            "tools/list", "tools", types.ListToolsResult, "tools", timeout, cache
        )
        self._tools = {tool.name: tool for tool in tools}
        return tools

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: TimeoutArg = DEFAULT,
        progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = True,
        max_total_timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
        retry: bool | None = None,
        caller: str | None = None,
    ) -> types.CallToolResult:
        """Call a tool and return its result.

        A result with ``is_error`` is returned, not raised: call
        ``result.raise_for_error()`` to raise :class:`~mcpsync.ToolError`.
        When the tool was listed with an ``outputSchema`` and :mod:`jsonschema`
        is installed, ``structured_content`` is validated against it, within
        the call's *timeout* and in bounded work (docs/security.rst).

        :param progress: ``fn(progress, total, message)``, run on the dispatcher thread.
        :param reset_timeout_on_progress: progress restarts the *timeout* window.
        :param max_total_timeout: a hard cap, progress or not.
        :param retry: ``True`` allows retrying this call after a transient
            failure although the tool declares neither ``idempotentHint`` nor
            ``readOnlyHint``; ``False`` never retries it (docs/policies.rst).
        :param caller: ``"app"`` or ``"model"``: raise :class:`~mcpsync.ToolNotVisible`,
            sending nothing, unless the tool's MCP Apps visibility includes it (docs/apps.rst).
        """
        started = time.monotonic()
        if caller is not None:
            check_caller(self, name, caller, self._deadline(timeout))
            # The check's listing counts: the call gets what is left of the timeout.
            seconds = self._timeout(timeout)
            timeout = None if seconds is None else max(0.0, seconds - (time.monotonic() - started))
            started = time.monotonic()
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if meta:
            params["_meta"] = dict(meta)
        conn = self._conn
        first: dict[str, Any] | None = None
        if (
            conn is not None
            and progress is None
            and max_total_timeout is None
            and not conn.policies.interceptors
            and conn.pid == os.getpid()
        ):
            # The hot path (an open connection, no progress, no interceptors): straight to
            # the policies, without Client.request and the input-required loop.  Threads
            # sharing a client pay for every Python frame of a call with the GIL.
            if conn.capabilities.tools is None:
                raise CapabilityNotSupported("tools", "tools/call")
            first = conn.policies.request(
                conn, "tools/call", params, timeout=self._timeout(timeout), retry=retry, start=started
            )
            kind = first.get("resultType")
            raw = first if kind is None or kind == "complete" else None
        else:
            raw = None
        if first is None:
            left = self._require("tools", "tools/call", timeout)
        else:
            # input_required or a task: the rest of the call shares the deadline fixed at its start.
            seconds = self._timeout(timeout)
            left = self._left(None if seconds is None else started + seconds)
        if raw is None:
            raw = self._request_until_complete(
                "tools/call",
                params,
                timeout=left,
                progress=progress,
                reset_timeout_on_progress=reset_timeout_on_progress,
                max_total_timeout=max_total_timeout,
                retry=retry,
                accept=("task",),
                first=first,
                started=started,
            )
        if raw.get("resultType") == "task":
            # Only with the tasks extension turned on for every request: wait for it here.
            return follow_task(cast("TaskClient", self), raw, self._timeout(timeout), started)
        result = types.tools.call_tool_result_from_wire(raw)
        tool = self._tools.get(name)
        if tool is not None and tool.output_schema is not None and not result.is_error:
            # Checking is part of the call: within its timeout (a fresh window after progress
            # that resets it), and never past max_total_timeout.
            seconds = self._timeout(timeout)
            since = time.monotonic() if progress is not None and reset_timeout_on_progress else started
            ends = [started + t for t in (max_total_timeout,) if t is not None]
            deadline = min([since + seconds] + ends if seconds is not None else ends, default=None)
            check_structured_content(name, tool.output_schema, result.structured_content, deadline)
        return result

    # -- resources -----------------------------------------------------------

    def list_resources(self, *, timeout: TimeoutArg = DEFAULT, cache: bool = True) -> list[types.Resource]:
        """All resources the server lists (every page)."""
        return self._paginate(
            "resources/list", "resources", types.ListResourcesResult, "resources", timeout, cache
        )

    def list_resource_templates(
        self, *, timeout: TimeoutArg = DEFAULT, cache: bool = True
    ) -> list[types.ResourceTemplate]:
        """All resource templates (every page)."""
        return self._paginate(
            "resources/templates/list",
            "resource_templates",
            types.ListResourceTemplatesResult,
            "resources",
            timeout,
            cache,
        )

    def read_resource(
        self, uri: str, *, timeout: TimeoutArg = DEFAULT, cache: bool = True
    ) -> types.ReadResourceResult:
        """Read a resource; ``.contents`` holds text and blob contents."""
        left = self._require("resources", "resources/read", timeout)
        raw = self._cache.get("resources/read", uri) if cache else None
        if raw is None:
            generation = self._cache.generation
            raw = self._request_until_complete("resources/read", {"uri": uri}, timeout=left)
            self._cache.put("resources/read", uri, raw, generation)
        return types.from_wire(types.ReadResourceResult, raw)

    def subscribe_resource(self, uri: str, *, timeout: TimeoutArg = DEFAULT) -> None:
        """Ask for ``notifications/resources/updated`` about *uri* (see :meth:`on`).

        On a modern server this joins the client's background
        ``subscriptions/listen`` stream.
        """
        # A modern server declares resources.subscribe when it serves resourceSubscriptions.
        left = self._require("resources.subscribe", "resources/subscribe", timeout)
        conn = self._connection()  # open now (the check above connected within the deadline)
        if conn.era == "legacy":
            self.request("resources/subscribe", {"uri": uri}, timeout=left)
        self._resource_subscriptions.add(uri)
        if conn.era == "modern":
            self._sync_background()

    def unsubscribe_resource(self, uri: str, *, timeout: TimeoutArg = DEFAULT) -> None:
        """Stop updates about *uri*."""
        deadline = self._deadline(timeout)
        conn = self._connection(deadline)
        self._resource_subscriptions.discard(uri)
        if conn.era == "legacy":
            self._require("resources.subscribe", "resources/unsubscribe", timeout)
            self.request("resources/unsubscribe", {"uri": uri}, timeout=self._left(deadline))
        else:
            self._sync_background()

    # -- prompts -------------------------------------------------------------

    def list_prompts(self, *, timeout: TimeoutArg = DEFAULT, cache: bool = True) -> list[types.Prompt]:
        """All prompts (every page)."""
        return self._paginate("prompts/list", "prompts", types.ListPromptsResult, "prompts", timeout, cache)

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: TimeoutArg = DEFAULT,
    ) -> types.GetPromptResult:
        """Render a prompt; ``.messages`` holds the conversation."""
        left = self._require("prompts", "prompts/get", timeout)
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = {key: str(value) for key, value in arguments.items()}
        return types.from_wire(types.GetPromptResult, self._request_until_complete("prompts/get", params, timeout=left))

    # -- the rest ------------------------------------------------------------

    def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument_name: str,
        argument_value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: TimeoutArg = DEFAULT,
    ) -> types.Completion:
        """Ask the server to complete an argument of a prompt or resource template."""
        left = self._require("completions", "completion/complete", timeout)
        params: dict[str, Any] = {
            "ref": types.to_wire(ref),
            "argument": {"name": argument_name, "value": argument_value},
        }
        if context:
            params["context"] = {"arguments": dict(context)}
        raw = self.request("completion/complete", params, timeout=left)
        return types.from_wire(types.CompleteResult, raw).completion

    def set_logging_level(self, level: types.LoggingLevel, *, timeout: TimeoutArg = DEFAULT) -> None:
        """Ask the server to send log messages at *level* and above.

        Modern servers take the level with every request; this sets it for
        all requests from now on.
        """
        left = self._require("logging", "logging/setLevel", timeout)
        conn = self._connection()  # open now (the check above connected within the deadline)
        if conn.era == "modern":
            conn.log_level = level
            conn.set_modern_meta()
            return
        self.request("logging/setLevel", {"level": level}, timeout=left)

    def ping(self, *, timeout: TimeoutArg = DEFAULT) -> None:
        """Check that the server answers (``server/discover`` on a modern server)."""
        deadline = self._deadline(timeout)
        conn = self._connection(deadline)
        self.request("ping" if conn.era == "legacy" else "server/discover", None, timeout=self._left(deadline))

    def notify_roots_changed(self) -> None:
        """Tell the server the roots changed (modern servers ask for them each time)."""
        conn = self._connection()
        if conn.era == "legacy":
            conn.notify("notifications/roots/list_changed")

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        timeout: TimeoutArg = DEFAULT,
        maxsize: int = 1000,
    ) -> Subscription:
        """Open a stream of list-changed and resource-updated notifications.

        Works in both eras: a ``subscriptions/listen`` request on a modern
        server (returns once the server acknowledged it); a filtered view of
        the connection's notifications on a handshake-era server (resource
        URIs are subscribed with ``resources/subscribe``).  Close it, or use
        it as a context manager.
        """
        deadline = self._deadline(timeout)
        conn = self._connection(deadline)
        filt = types.SubscriptionFilter(
            tools_list_changed=tools or None,
            prompts_list_changed=prompts or None,
            resources_list_changed=resources or None,
            resource_subscriptions=list(resource_uris) or None,
        )
        sub = Subscription(filt, maxsize=maxsize, on_close=conn.remove_subscription)
        if conn.era == "legacy":
            for uri in resource_uris:
                self.subscribe_resource(uri, timeout=self._left(deadline))
            conn.add_subscription(sub, None)
            sub._acknowledge(types.to_wire(filt))
            return sub
        return conn.listen(sub, self._left(deadline))
