"""Types of the stateless protocol era (2026-07-28): discovery, MRTR, subscriptions.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ._base import MetaObject, WireObject
from .lifecycle import ServerCapabilities

__all__ = ["PROTOCOL_VERSION_KEY", "CLIENT_INFO_KEY", "CLIENT_CAPABILITIES_KEY", "LOG_LEVEL_KEY", "SERVER_INFO_KEY",
           "SUBSCRIPTION_ID_KEY", "CacheScope", "DiscoverResult", "InputRequest", "InputRequiredResult",
           "SubscriptionFilter", "SubscriptionsListenRequestParams", "SubscriptionsAcknowledgedNotificationParams"]

#: ``_meta`` keys every modern request carries (and the optional log level).
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
#: ``_meta`` key of results naming the server software.
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
#: ``_meta`` key of notifications delivered on a ``subscriptions/listen`` stream.
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"

#: Who may reuse a cached result: anyone, or only the same authorization context.
CacheScope = Literal["public", "private"]


@attrs.define(repr=False, eq=False)
class DiscoverResult(MetaObject):
    """The answer to ``server/discover``: versions, capabilities, instructions."""

    supported_versions: list[str]
    capabilities: ServerCapabilities
    instructions: str | None = None
    result_type: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None


@attrs.define(repr=False, eq=False)
class InputRequest(WireObject):
    """One request the server needs answered before it can finish (MRTR)."""

    method: str
    params: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class InputRequiredResult(MetaObject):
    """``resultType: "input_required"``: answer ``input_requests`` and retry."""

    result_type: str = "input_required"
    input_requests: dict[str, InputRequest] | None = None
    request_state: str | None = None


@attrs.define(repr=False, eq=False)
class SubscriptionFilter(WireObject):
    """What a ``subscriptions/listen`` stream should carry (each type is opt-in)."""

    tools_list_changed: bool | None = None
    prompts_list_changed: bool | None = None
    resources_list_changed: bool | None = None
    resource_subscriptions: list[str] | None = None


@attrs.define(repr=False, eq=False)
class SubscriptionsListenRequestParams(MetaObject):
    """The ``params`` of ``subscriptions/listen``."""

    notifications: SubscriptionFilter


@attrs.define(repr=False, eq=False)
class SubscriptionsAcknowledgedNotificationParams(MetaObject):
    """The server's acknowledgement of a listen stream: what it agreed to send."""

    notifications: SubscriptionFilter
