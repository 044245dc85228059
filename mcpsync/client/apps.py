"""MCP Apps on the client: advertising the extension, reading a tool's UI, visibility checks.

``Client(apps=True)`` advertises ``{"mimeTypes": ["text/html;profile=mcp-app"]}``
under ``io.modelcontextprotocol/ui`` (servers built with the official SDK show
their UIs only to such a client); :meth:`Apps.read_app` reads and checks a
``ui://`` resource; :func:`check_caller` is ``call_tool(..., caller=...)``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcpsync import types
from mcpsync.client.options import DEFAULT, TimeoutArg
from mcpsync.exceptions import AppResourceError, ToolNotVisible

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["APPS_SETTINGS", "Apps", "check_caller"]

#: The extension's settings this client advertises.
APPS_SETTINGS = {types.APPS_EXTENSION: {"mimeTypes": [types.APP_MIME_TYPE]}}


def check_caller(client: Any, name: str, caller: str, deadline: float | None) -> None:
    """Raise :class:`ToolNotVisible` unless tool *name* is visible to *caller*.

    The tools are listed (within *deadline*) when the client does not know *name*.

    :raises ValueError: *caller* is not ``"model"`` or ``"app"``.
    """
    if caller not in ("model", "app"):
        raise ValueError(f"caller must be 'model', 'app' or None, not {caller!r}")
    if name not in client._tools:
        client.list_tools(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
    tool = client._tools.get(name)
    if tool is None:
        raise ToolNotVisible(name, caller, "the server lists no such tool")
    ui = tool.ui
    if ui is not None and caller not in ui.visibility:
        raise ToolNotVisible(name, caller, f"its visibility is {list(ui.visibility)}")


class Apps:
    """:meth:`read_app`, for :class:`mcpsync.Client`."""

    if TYPE_CHECKING:
        list_resources: Callable[..., list[types.Resource]]
        read_resource: Callable[..., types.ReadResourceResult]

        def _deadline(self, timeout: TimeoutArg) -> float | None: ...

        @staticmethod
        def _left(deadline: float | None) -> float | None: ...

    def read_app(self, uri: str | types.Tool, *, timeout: TimeoutArg = DEFAULT) -> types.AppResource:
        """Read an MCP Apps UI resource: its HTML, its ``_meta.ui``, its CSP (``csp_header()``).

        :param uri: a ``ui://`` URI, or a tool whose ``ui.resource_uri`` is read.
        :raises mcpsync.AppResourceError: not a ``ui://`` URI (or a tool without a UI), or
            content that is not ``text/html;profile=mcp-app`` HTML.
        """
        if isinstance(uri, types.Tool):
            ui = uri.ui
            if ui is None or ui.resource_uri is None:
                raise AppResourceError(f"tool {uri.name!r} has no UI (_meta.ui.resourceUri)")
            uri = ui.resource_uri
        if not isinstance(uri, str) or not uri.startswith("ui://"):
            raise AppResourceError(f"not a ui:// URI: {uri!r}")
        deadline = self._deadline(timeout)
        result = self.read_resource(uri, timeout=self._left(deadline))
        contents = [c for c in result.contents if c.uri == uri] or result.contents
        if not contents:
            raise AppResourceError(f"{uri}: resources/read returned no content")
        # The list entry's _meta.ui is the fallback for each member the content leaves out.
        listed = next((r.meta for r in self.list_resources(timeout=self._left(deadline)) if r.uri == uri), None)
        ui = (listed or {}).get("ui")
        return types.app_resource(uri, contents[0], ui if isinstance(ui, dict) else None)
