"""MCP Apps in a Django project of one file: ``python examples/django_apps.py``, then open
http://localhost:8000/ (it signs you in as a demo user; never do that in production).

The counter of ``examples/apps_server.py`` in a page of this site.  The app's HTML runs in a
sandbox on another origin, here ``http://127.0.0.1:8000`` (the same server under another host
name); in production give it a domain of its own (see docs/apps.rst).  ``PORT`` changes the port.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

import django
from django.conf import settings

PORT = int(os.environ.get("PORT", "8000"))

settings.configure(
    DEBUG=False,
    SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "example-only-not-secret"),
    ALLOWED_HOSTS=["localhost", "127.0.0.1"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
                    "mcpsync.contrib.django"],
    MIDDLEWARE=["django.contrib.sessions.middleware.SessionMiddleware", "django.middleware.csrf.CsrfViewMiddleware",
                "django.contrib.auth.middleware.AuthenticationMiddleware",
                "mcpsync.contrib.django.middleware.McpAuthorizationMiddleware"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3",
                           "NAME": os.path.join(tempfile.mkdtemp(prefix="django-apps-"), "db.sqlite3")}},
    USE_TZ=True,
    MCP_SERVERS={"counter": {"command": sys.executable, "args": [str(Path(__file__).with_name("apps_server.py"))],
                             "apps": True}},
    MCP_APPS_SANDBOX_ORIGIN=os.environ.get("MCP_APPS_SANDBOX_ORIGIN", f"http://127.0.0.1:{PORT}"),
)
django.setup()

from django.contrib.auth import get_user_model, login  # noqa: E402
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.urls import include, path, reverse  # noqa: E402


def index(request: HttpRequest) -> HttpResponse:
    user, _ = get_user_model().objects.get_or_create(username="demo")
    login(request, user)  # the example's stand-in for a real sign-in
    url = reverse("mcpsync:app", args=["counter", "show_counter"])
    return HttpResponse(f'<p><a href="{url}?arguments={quote(json.dumps({"start": 41}))}">Show the counter</a></p>')


urlpatterns = [path("", index), path("mcp/", include("mcpsync.contrib.django.urls"))]

if __name__ == "__main__":
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("runserver", f"127.0.0.1:{PORT}", use_reloader=False)
