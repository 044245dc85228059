"""The handshake: who is talking, what each side can do, and the ``initialize`` exchange.

Capabilities are small attrs classes so that ``caps.resources.subscribe`` reads
naturally; an absent capability is ``None``. Capabilities that are plain
"present or not" flags in the spec (``logging``, ``completions``) and the open
ended ones (``experimental``, ``tasks``, ``extensions``) are ``dict`` objects.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any

import attrs

from ._base import MetaObject, WireObject

__all__ = ["ClientCapabilities", "ElicitationCapability", "Icon", "Implementation", "InitializeRequestParams",
           "InitializeResult", "PromptsCapability", "ResourcesCapability", "RootsCapability", "SamplingCapability",
           "ServerCapabilities", "ToolsCapability"]


@attrs.define(repr=False, eq=False)
class Icon(WireObject):
    """An icon a client may show for a server, tool, resource or prompt (2025-11-25).

    ::

        Icon("https://example.com/icon.png", mime_type="image/png", sizes=["48x48"])
    """

    #: URI of the icon: ``https:`` or a ``data:`` URI.
    src: str
    mime_type: str | None = None
    #: Sizes such as ``"48x48"`` or ``"any"``.
    sizes: list[str] | None = None
    #: ``"light"`` or ``"dark"``: the background the icon is designed for.
    theme: str | None = None


@attrs.define(repr=False, eq=False)
class Implementation(WireObject):
    """Name and version of an MCP client or server (``clientInfo`` / ``serverInfo``).

    ::

        Implementation("my-app", "1.0", title="My App")
    """

    name: str
    version: str
    #: Human-readable name for display (2025-06-18+).
    title: str | None = None
    description: str | None = None
    icons: list[Icon] | None = None
    website_url: str | None = None


@attrs.define(repr=False, eq=False)
class RootsCapability(WireObject):
    """The client can answer ``roots/list``."""

    #: The client sends ``notifications/roots/list_changed``.
    list_changed: bool | None = None


@attrs.define(repr=False, eq=False)
class SamplingCapability(WireObject):
    """The client can answer ``sampling/createMessage``.

    ``context`` and ``tools`` are empty objects when the client supports
    ``includeContext`` and tool use in sampling (2025-11-25).
    """

    context: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class ElicitationCapability(WireObject):
    """The client can answer ``elicitation/create``.

    An empty object means form mode only; ``form``/``url`` name the modes (2025-11-25).
    """

    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class ClientCapabilities(WireObject):
    """What the client supports, sent in ``initialize``.

    ::

        ClientCapabilities(roots=RootsCapability(list_changed=True),
                           sampling=SamplingCapability())
    """

    roots: RootsCapability | None = None
    sampling: SamplingCapability | None = None
    elicitation: ElicitationCapability | None = None
    experimental: dict[str, Any] | None = None
    #: Task-augmented requests the client supports (2025-11-25), verbatim.
    tasks: dict[str, Any] | None = None
    #: Protocol extensions (2026-07-28), verbatim.
    extensions: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class PromptsCapability(WireObject):
    """The server offers prompts."""

    list_changed: bool | None = None


@attrs.define(repr=False, eq=False)
class ResourcesCapability(WireObject):
    """The server offers resources."""

    #: The server supports ``resources/subscribe``.
    subscribe: bool | None = None
    list_changed: bool | None = None


@attrs.define(repr=False, eq=False)
class ToolsCapability(WireObject):
    """The server offers tools."""

    list_changed: bool | None = None


@attrs.define(repr=False, eq=False)
class ServerCapabilities(WireObject):
    """What the server supports, from the ``initialize`` result.

    Test a capability with ``is not None``: ``{"logging": {}}`` is a declared
    capability with no options. ::

        if caps.resources is not None and caps.resources.subscribe:
            ...
    """

    experimental: dict[str, Any] | None = None
    logging: dict[str, Any] | None = None
    completions: dict[str, Any] | None = None
    prompts: PromptsCapability | None = None
    resources: ResourcesCapability | None = None
    tools: ToolsCapability | None = None
    #: Task support (2025-11-25), verbatim.
    tasks: dict[str, Any] | None = None
    #: Protocol extensions (2026-07-28), verbatim.
    extensions: dict[str, Any] | None = None


@attrs.define(repr=False, eq=False)
class InitializeRequestParams(MetaObject):
    """The ``params`` of ``initialize``, sent by the client."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation


@attrs.define(repr=False, eq=False)
class InitializeResult(MetaObject):
    """The server's answer to ``initialize``."""

    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    #: Hints for the model on how to use this server.
    instructions: str | None = None
