"""MCP Apps on the client: advertising the extension, reading a tool's UI, visibility checks.

``Client(apps=True)`` advertises ``{"mimeTypes": ["text/html;profile=mcp-app"]}``
under ``io.modelcontextprotocol/ui`` (servers built with the official SDK show
their UIs only to such a client); :func:`read_app` reads and checks a ``ui://``
resource; :func:`check_caller` is ``call_tool(..., caller=...)``.
"""

from __future__ import annotations

from mcpsync import types
from mcpsync.client.core import Core
from mcpsync.client.options import DEFAULT, TimeoutArg
from mcpsync.exceptions import AppResourceError, ToolNotVisible
from mcpsync.rpc.deadline import Deadline

__all__ = ["APPS_SETTINGS", "check_caller", "read_app"]

#: The extension's settings this client advertises.
APPS_SETTINGS = {types.APPS_EXTENSION: {"mimeTypes": [types.APP_MIME_TYPE]}}


def check_caller(client: Core, name: str, caller: str, deadline: Deadline) -> None:
    """Raise :class:`ToolNotVisible` unless tool *name* is visible to *caller*.

    The tools are listed (within *deadline*) when the client does not know *name*.

    :raises ValueError: *caller* is not ``"model"`` or ``"app"``.
    """
    if caller not in ("model", "app"):
        raise ValueError(f"caller must be 'model', 'app' or None, not {caller!r}")
    if name not in client._tools:
        client.list_tools(timeout=deadline)
    tool = client._tools.get(name)
    if tool is None:
        raise ToolNotVisible(name, caller, "the server lists no such tool")
    ui = tool.ui
    if ui is not None and caller not in ui.visibility:
        raise ToolNotVisible(name, caller, f"its visibility is {list(ui.visibility)}")


def read_app(client: Core, uri: str | types.Tool, *, timeout: TimeoutArg = DEFAULT) -> types.AppResource:
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
    deadline = client._options.deadline(timeout)
    result = client.read_resource(uri, timeout=deadline)
    contents = [c for c in result.contents if c.uri == uri] or result.contents
    if not contents:
        raise AppResourceError(f"{uri}: resources/read returned no content")
    # The list entry's _meta.ui is the fallback for each member the content leaves out.
    listed = next((r.meta for r in client.list_resources(timeout=deadline) if r.uri == uri), None)
    ui = (listed or {}).get("ui")
    return types.app_resource(uri, contents[0], ui if isinstance(ui, dict) else None)
