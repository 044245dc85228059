"""Which server-supplied URLs the OAuth flows may fetch or send a user to (RELIABILITY F2).

:class:`UrlPolicy` judges every URL against the MCP server's own URL: https
only (plain http only between loopback hosts), and no loopback, private or
link-local address unless the MCP server lives there too.  Re-exported by
:mod:`mcpsync.auth._discovery`, which applies it to every fetch.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from ._errors import DiscoveryError, SSRFBlockedError


_IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _literal(host: str) -> _IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _host_addresses(host: str) -> list[_IPAddress]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise DiscoveryError(f"cannot resolve {host!r}: {exc}") from None
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]  # less an IPv6 zone id


def _kind(addr: _IPAddress) -> str:
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    if addr.is_loopback:
        return "loopback"
    if addr.is_link_local or addr.is_multicast or addr.is_unspecified or addr.is_reserved:
        return "forbidden"
    if addr.is_private or (isinstance(addr, ipaddress.IPv4Address) and addr in ipaddress.ip_network("100.64.0.0/10")):
        return "private"
    return "public"


class UrlPolicy:
    """Which server-supplied URLs we may fetch or send a user to, judged by the MCP server's own URL.

    Addresses are checked when resolved; the connection is not pinned to them
    (DNS rebinding): outside loopback only https is allowed, and certificate
    verification for the host name refuses a rebound address before any
    request is sent.  docs/auth.rst, "Security choices", gives the reasoning.

    :param server_url: the MCP server's URL.
    :param resolve: look hosts up and check the addresses (tests may switch it off
        for hosts that do not resolve).
    """

    def __init__(self, server_url: str, *, resolve: bool = True) -> None:
        self._resolve = resolve
        kinds = self._kinds(urlsplit(server_url).hostname or "")
        #: The MCP server is on loopback: a local development setup.
        self.local = kinds == {"loopback"}
        #: The MCP server is on a private network: its authorization server may be too.
        self.private = bool(kinds & {"private"}) or self.local

    def _kinds(self, host: str) -> set[str]:
        if (literal := _literal(host)) is None and not self._resolve:
            return {"loopback"} if host.lower() == "localhost" else {"public"}
        return {_kind(a) for a in ([literal] if literal is not None else _host_addresses(host))}

    def check(self, url: str, what: str) -> str:
        """Return *url* if it may be used for *what*, else raise :class:`SSRFBlockedError`."""
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), parts.hostname or ""
        if scheme not in ("https", "http") or not host or parts.username or parts.password:
            raise SSRFBlockedError(f"{what}: only https URLs with a host are allowed (got scheme {scheme!r})")
        kinds = self._kinds(host)
        if scheme == "http" and not (self.local and kinds == {"loopback"}):
            raise SSRFBlockedError(f"{what}: plain http is allowed only between loopback hosts ({host})")
        if "forbidden" in kinds:
            raise SSRFBlockedError(f"{what}: {host} resolves to a link-local, multicast or reserved address")
        if "loopback" in kinds and not self.local:
            raise SSRFBlockedError(f"{what}: {host} is a loopback address but the MCP server is not")
        if "private" in kinds and not self.private:
            raise SSRFBlockedError(f"{what}: {host} is a private address but the MCP server is public")
        return url
