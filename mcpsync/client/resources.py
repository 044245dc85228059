"""Resources and notification streams, the same in both eras (functions over :class:`~.core.Core`)."""

from __future__ import annotations

from collections.abc import Sequence

from mcpsync import types
from mcpsync.client.core import Core, cached, paginate, require
from mcpsync.client.options import DEFAULT, TimeoutArg
from mcpsync.client.subscriptions import Subscription

__all__ = ["list_resource_templates", "list_resources", "listen", "read_resource", "subscribe_resource",
           "unsubscribe_resource"]


def list_resources(client: Core, *, timeout: TimeoutArg = DEFAULT, cache: bool = True) -> list[types.Resource]:
    """All resources the server lists (every page)."""
    return paginate(client, "resources/list", "resources", types.ListResourcesResult, "resources",
                    client._options.deadline(timeout), cache)


def list_resource_templates(client: Core, *, timeout: TimeoutArg = DEFAULT,
                            cache: bool = True) -> list[types.ResourceTemplate]:
    """All resource templates (every page)."""
    return paginate(client, "resources/templates/list", "resource_templates", types.ListResourceTemplatesResult,
                    "resources", client._options.deadline(timeout), cache)


def read_resource(client: Core, uri: str, *, timeout: TimeoutArg = DEFAULT,
                  cache: bool = True) -> types.ReadResourceResult:
    """Read a resource; ``.contents`` holds text and blob contents."""
    raw = cached(client, "resources/read", uri, {"uri": uri}, client._options.deadline(timeout), "resources", cache)
    return types.from_wire(types.ReadResourceResult, raw)


def subscribe_resource(client: Core, uri: str, *, timeout: TimeoutArg = DEFAULT) -> None:
    """Ask for ``notifications/resources/updated`` about *uri* (see :meth:`~mcpsync.Client.on`).

    On a modern server this joins the client's background ``subscriptions/listen`` stream.
    """
    deadline = client._options.deadline(timeout)
    conn = client._connection(deadline)
    if conn.era == "legacy":
        client._call("resources/subscribe", {"uri": uri}, deadline, capability="resources.subscribe", rounds=False)
    else:  # a modern server declares resources.subscribe when it serves resourceSubscriptions
        require(conn.capabilities, "resources.subscribe", "resources/subscribe")
    client._resource_subscriptions.add(uri)
    client._sync_background(deadline)


def unsubscribe_resource(client: Core, uri: str, *, timeout: TimeoutArg = DEFAULT) -> None:
    """Stop updates about *uri*."""
    deadline = client._options.deadline(timeout)
    client._resource_subscriptions.discard(uri)
    if client._connection(deadline).era == "legacy":
        client._call("resources/unsubscribe", {"uri": uri}, deadline, capability="resources.subscribe", rounds=False)
    else:
        client._sync_background(deadline)


def listen(client: Core, *, tools: bool = False, prompts: bool = False, resources: bool = False,
           resource_uris: Sequence[str] = (), timeout: TimeoutArg = DEFAULT, maxsize: int = 1000) -> Subscription:
    """Open a stream of list-changed and resource-updated notifications.

    Works in both eras: a ``subscriptions/listen`` request on a modern server (returns
    once the server acknowledged it); a filtered view of the connection's notifications
    on a handshake-era server (resource URIs are subscribed with
    ``resources/subscribe``).  Close it, or use it as a context manager.
    """
    deadline = client._options.deadline(timeout)
    conn = client._connection(deadline)
    filt = types.SubscriptionFilter(tools_list_changed=tools or None, prompts_list_changed=prompts or None,
                                    resources_list_changed=resources or None,
                                    resource_subscriptions=list(resource_uris) or None)
    sub = Subscription(filt, maxsize=maxsize, on_close=conn.remove_subscription)
    if conn.era == "legacy":
        for uri in resource_uris:
            subscribe_resource(client, uri, timeout=deadline)
        conn.router.add(sub)
        sub._acknowledge(types.to_wire(filt))
        return sub
    return conn.listen(sub, deadline)
