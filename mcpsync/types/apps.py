"""MCP Apps (extension ``io.modelcontextprotocol/ui``, 2026-01-26): a tool's interactive UI.

A tool names a ``ui://`` resource in ``_meta.ui.resourceUri``; the resource is an
HTML document (``text/html;profile=mcp-app``) that a host renders in a sandboxed
iframe, under a Content-Security-Policy built from what the resource declares.
:class:`ToolUi` is what a tool says (``tool.ui``), :class:`AppResource` what
:meth:`mcpsync.Client.read_app` returns.

.. versionadded:: 0.3
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

import attrs

from ..exceptions import AppResourceError, excerpt

__all__ = ["APPS_EXTENSION", "APP_MIME_TYPE", "AppCsp", "AppResource", "ToolUi", "app_resource"]

log = logging.getLogger(__name__)

APPS_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
_VISIBILITY = ("model", "app")
_PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
_CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
#: A CSP source that is an origin: scheme://host[:port], the host may start with "*.".
_ORIGIN = re.compile(r"(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]{1,5})?")


@attrs.frozen
class ToolUi:
    """A tool's ``_meta.ui``: its UI resource and who may see and call it."""

    #: The ``ui://`` URI of the tool's UI (``None``: the tool declares visibility only).
    resource_uri: str | None = None
    #: ``"model"`` (offered to an LLM) and/or ``"app"`` (callable from its server's apps).
    visibility: tuple[str, ...] = _VISIBILITY
    #: The other members of ``_meta.ui``, as they came.
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)

    @property
    def model_visible(self) -> bool:
        """Whether a host may offer the tool to a model."""
        return "model" in self.visibility

    @property
    def app_visible(self) -> bool:
        """Whether an app of the same server may call the tool."""
        return "app" in self.visibility


def tool_ui(meta: Mapping[str, Any] | None) -> ToolUi | None:
    """The :class:`ToolUi` of a tool's ``_meta`` (``None``: no ``ui`` entry).

    The deprecated flat ``_meta["ui/resourceUri"]`` is read too.  A visibility that is
    not a list of strings counts as a list of what it names among ``"model"`` and
    ``"app"`` (a bad value hides the tool from both: it fails closed).
    """
    meta = meta if isinstance(meta, Mapping) else {}
    ui, flat = meta.get("ui"), meta.get("ui/resourceUri")
    if not isinstance(ui, Mapping):
        if not isinstance(flat, str):
            return None
        ui = {}
    uri = ui.get("resourceUri", flat)
    visibility = ui.get("visibility", _VISIBILITY)
    if isinstance(visibility, str):
        visibility = [visibility]
    seen = visibility if isinstance(visibility, (list, tuple)) else ()
    return ToolUi(uri if isinstance(uri, str) else None, tuple(v for v in _VISIBILITY if v in seen),
                  extra={k: v for k, v in ui.items() if k not in ("resourceUri", "visibility")})


@attrs.frozen
class AppCsp:
    """The origins an app declared, by the CSP directives they open (all empty: none)."""

    connect_domains: tuple[str, ...] = ()
    resource_domains: tuple[str, ...] = ()
    frame_domains: tuple[str, ...] = ()
    base_uri_domains: tuple[str, ...] = ()
    #: Other members of ``csp``, as they came (never in :meth:`AppResource.csp_header`).
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)


@attrs.frozen
class AppResource:
    """An app's HTML and what it declared about its sandbox (``_meta.ui``)."""

    uri: str
    html: str = attrs.field(repr=False)
    mime_type: str = APP_MIME_TYPE
    csp: AppCsp = AppCsp()
    #: Among ``"camera"``, ``"microphone"``, ``"geolocation"``, ``"clipboardWrite"``.
    permissions: frozenset[str] = frozenset()
    #: The dedicated sandbox domain the app asks for (host-specific; ``None``: any).
    domain: str | None = None
    prefers_border: bool | None = None
    #: Other members of ``_meta.ui``, as they came.
    extra: dict[str, Any] = attrs.field(factory=dict, kw_only=True)

    def csp_header(self) -> str:
        """The ``Content-Security-Policy`` a host serves the app's document with.

        Nothing declared: the spec's restrictive default, plus ``frame-src 'none'``,
        ``object-src 'none'`` and ``base-uri 'self'``.  Declared origins open exactly
        the directives the spec maps them to; nothing else is ever allowed.
        """
        csp, none = self.csp, "'none'"
        res = " ".join(csp.resource_domains)
        directives = [
            "default-src 'none'",
            f"script-src 'self' 'unsafe-inline' {res}",
            f"style-src 'self' 'unsafe-inline' {res}",
            f"img-src 'self' data: {res}",
            f"font-src 'self' {res}" if res else "",  # the default has none: fonts only when declared
            f"media-src 'self' data: {res}",
            f"connect-src {' '.join(csp.connect_domains) or none}",
            f"frame-src {' '.join(csp.frame_domains) or none}",
            "object-src 'none'",
            "base-uri " + (" ".join(csp.base_uri_domains) or "'self'"),
        ]
        return "; ".join(d.strip() for d in directives if d)


def _origins(uri: str, csp: Mapping[str, Any], key: str) -> tuple[str, ...]:
    values = csp.get(key) or []
    if not isinstance(values, list):
        raise AppResourceError(f"{uri}: _meta.ui.csp.{key} must be a list of origins")
    kept = []
    for value in values:
        origin = value.rstrip("/") if isinstance(value, str) else ""
        if _ORIGIN.fullmatch(origin):
            kept.append(origin)
        else:  # never in a header: "*", "'unsafe-eval'", "a.com; script-src *" ...
            log.warning("%s: _meta.ui.csp.%s entry %s is not an origin; dropped", uri, key, excerpt(value, 80))
    return tuple(kept)


def app_resource(uri: str, content: Any, listed: Mapping[str, Any] | None = None) -> AppResource:
    """An :class:`AppResource` from a ``resources/read`` content and the ``resources/list`` entry's
    ``_meta.ui`` (*listed*); each member the content's ``_meta.ui`` sets wins.

    :raises mcpsync.AppResourceError: a wrong mimeType, no text or blob, a blob that is not
        base64 UTF-8, or a malformed ``_meta.ui``.
    """
    mime = getattr(content, "mime_type", None)
    if mime is None or mime.replace(" ", "").lower() != APP_MIME_TYPE:
        raise AppResourceError(f"{uri}: mimeType {excerpt(mime, 60)}, not {APP_MIME_TYPE!r}")
    html = getattr(content, "text", None)
    if html is None:
        # Imported here only: base64 and struct cost every process that imports mcpsync ~0.2 MB.
        import base64
        import binascii

        try:
            html = base64.b64decode(getattr(content, "blob", None) or "", validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, TypeError) as exc:
            raise AppResourceError(f"{uri}: the blob is not base64-encoded UTF-8 HTML ({exc})") from None
    own = (getattr(content, "meta", None) or {}).get("ui") or {}
    ui = {**(listed or {}), **own} if isinstance(own, Mapping) else {"csp": own}
    csp, permissions = ui.get("csp") or {}, ui.get("permissions") or {}
    if not isinstance(csp, Mapping) or not isinstance(permissions, Mapping):
        raise AppResourceError(f"{uri}: malformed _meta.ui: {excerpt(own, 200)}")
    domain, border = ui.get("domain"), ui.get("prefersBorder")
    app_csp = AppCsp(*(_origins(uri, csp, k) for k in _CSP_KEYS),
                     extra={k: v for k, v in csp.items() if k not in _CSP_KEYS})
    rest = {k: v for k, v in ui.items() if k not in ("csp", "permissions", "domain", "prefersBorder")}
    return AppResource(uri=uri, html=html, mime_type=mime, csp=app_csp,
                       permissions=frozenset(p for p in _PERMISSIONS if p in permissions),
                       domain=domain if isinstance(domain, str) else None,
                       prefers_border=border if isinstance(border, bool) else None, extra=rest)
