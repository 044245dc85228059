"""Turns :class:`~mcpsync.auth.AuthorizationRequired` from a view into the login redirect.

Add ``"mcpsync.contrib.django.middleware.McpAuthorizationMiddleware"`` after the
session and authentication middleware; a view that calls a per-user server
(:func:`~mcpsync.contrib.django.client_for_user`) then needs no login code: the
user is sent to the authorization server (first login, expired grant, or
step-up to more scopes) and brought back to the same page afterwards.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from ...auth import AuthorizationRequired
from .._useroauth import to_login
from .views import respond, web_of

__all__ = ["McpAuthorizationMiddleware"]


class McpAuthorizationMiddleware:
    """Redirects to :attr:`AuthorizationRequired.url`, remembering the page to come back to."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, AuthorizationRequired):
            return None
        return respond(to_login(web_of(request), exception))
