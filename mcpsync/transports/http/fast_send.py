"""A fast path: sending one HTTP request through the user's ``requests.Session``, cheaply.

``Session.request`` re-reads the environment on every call: proxy variables
(``merge_environment_settings`` and, again, ``resolve_proxies``), ``~/.netrc``
and the CA-bundle variables, and it copies the cookie jar.  On a loopback
server that is about a third of a request's cost.  :class:`Sender` does the
same preparation as ``Session.request`` but reads what comes from the
environment once per URL (on first use) and then reuses it:

* the session's headers, cookies, hooks, adapters (retries, TLS) and ``auth``
  are honoured exactly as ``Session.request`` would, read at every request;
* proxies (``session.proxies`` merged with ``*_PROXY``/``NO_PROXY``),
  ``verify``/``cert`` (with ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE``), the
  query ``session.params`` adds and the ``.netrc`` credentials are fixed per
  URL on first use: environment changes made later in the process are not
  seen by an open transport (documented in ``docs/transports.rst``).

What it buys (issue 24: a second path keeps its place only for >= 10 % on a named bench
row; docs/threading.rst): ``bench/run.py --no-sdk --rounds 5`` with a copy of this tree
whose ``send`` is the plain ``Session.prepare_request`` + ``merge_environment_settings``
path as a baseline, interleaved on a loaded 2-CPU machine (load 5.9): "JSON reply" 2,162
against 1,441 calls/s (p50 424 against 629 µs), "SSE reply" p50 436 against 652 µs,
"legacy HTTP+SSE" 2,232 against 1,168 calls/s, "8 threads, JSON reply" 2,209 against 1,311.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from mcpsync.rpc.deadline import REQUEST_ATTRIBUTE, Deadline

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["SERVER_ATTRIBUTE", "Sender"]

#: URLs whose settings are kept (the endpoint, a legacy message URL, a few redirect targets).
_MAX_URLS = 16

#: The ``PreparedRequest`` attribute naming the MCP server a request is for (the URL the
#: client was given): the auth handler binds tokens by it, so a legacy HTTP+SSE message
#: endpoint the server named gets that server's token.  Same string as in mcpsync.auth.
SERVER_ATTRIBUTE = "mcpsync_server"

class _Target(NamedTuple):
    """What is fixed for one URL: its prepared form, its environment settings, its auth."""

    url: str
    settings: dict[str, Any]
    auth: Any


class Sender:
    """Send requests through *session*, with *auth* (``None``: the session's, then ``.netrc``).

    Thread-safe: requests share nothing but the per-URL cache (a race may fill one entry twice, alike).
    """

    def __init__(self, session: requests.Session, auth: Any = None, server_url: str | None = None) -> None:
        self.session = session
        self.auth = auth
        self.server_url = server_url
        self._targets: dict[str, _Target] = {}

    def target(self, url: str) -> _Target:
        """What is fixed for *url* (read on first use); its ``settings["proxies"]``: the proxies in effect."""
        target = self._targets.get(url)
        if target is not None:
            return target
        from requests.models import PreparedRequest
        from requests.utils import get_auth_from_url, get_netrc_auth

        session = self.session
        settings = session.merge_environment_settings(url, {}, None, None, None)
        template = PreparedRequest()
        template.prepare_url(url, session.params)
        auth = self.auth if self.auth is not None else session.auth
        if auth is None and session.trust_env:
            auth = get_netrc_auth(url)
        if auth is None:
            # Credentials in the URL itself, as PreparedRequest.prepare_auth would find them.
            from_url = get_auth_from_url(template.url or url)
            auth = from_url if any(from_url) else None
        target = _Target(template.url or url, dict(settings), auth)
        if len(self._targets) < _MAX_URLS:  # about: racing threads may pass it together
            self._targets[url] = target
        return target

    def send(self, method: str, url: str, *, headers: Mapping[str, str], timeout: tuple[float, float | None],
             data: bytes | None = None, deadline: Deadline | None = None) -> requests.Response:
        """One request, streamed, no redirects followed; raises ``requests`` exceptions as they come.

        :param deadline: the request's deadline, handed to its auth handler as the
            ``PreparedRequest`` attribute :data:`~mcpsync.rpc.deadline.REQUEST_ATTRIBUTE`
            (the :class:`Deadline` itself); *timeout* is the caller's to bound.
        """
        from requests.cookies import RequestsCookieJar, merge_cookies
        from requests.models import PreparedRequest
        from requests.sessions import merge_setting
        from requests.structures import CaseInsensitiveDict

        session = self.session
        target = self.target(url)
        prepared = PreparedRequest()
        prepared.method = method
        prepared.url = target.url
        prepared.prepare_headers(merge_setting(headers, session.headers, dict_class=CaseInsensitiveDict))  # type: ignore[no-untyped-call]
        jar = session.cookies
        # A copy, as Session.prepare_request makes; an empty jar adds no header.
        cookies = merge_cookies(RequestsCookieJar(), jar) if len(jar) else RequestsCookieJar()  # type: ignore[no-untyped-call]
        if len(jar):
            prepared.prepare_cookies(cookies)
        else:
            prepared._cookies = cookies  # type: ignore[attr-defined]
        prepared.prepare_body(data, None, None)
        if deadline is not None:
            setattr(prepared, REQUEST_ATTRIBUTE, deadline)
        if self.server_url is not None:
            setattr(prepared, SERVER_ATTRIBUTE, self.server_url)
        if target.auth is not None:
            prepared.prepare_auth(target.auth, target.url)
        prepared.prepare_hooks(session.hooks)
        return session.send(prepared, timeout=timeout, allow_redirects=False, **{**target.settings, "stream": True})
