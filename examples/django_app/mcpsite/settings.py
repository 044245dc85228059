"""Settings of the example site: the MCP servers are plain settings (see docs/django.rst).

* ``demo``: the bundled demo server over stdio, shared by every request of a process;
* ``remote`` (when ``MCP_URL`` is set): an OAuth-protected server called on
  behalf of each logged-in user, tokens encrypted in the database with
  ``MCP_TOKEN_KEY``.

``MCP_CONFIG`` names an ``mcpServers`` file to use instead of the demo entry.
"""

import os
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-not-secret")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
ROOT_URLCONF = "mcpsite.urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "mcpsync.contrib.django",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "mcpsync.contrib.django.middleware.McpAuthorizationMiddleware",
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("MCPSITE_DB", str(BASE_DIR / "db.sqlite3")),
    }
}
USE_TZ = True
LOGIN_URL = "/login"

MCP_SERVERS = os.environ.get("MCP_CONFIG") or {
    "demo": {"command": sys.executable, "args": ["-m", "mcpsync.demo"]},
}
if os.environ.get("MCP_URL") and isinstance(MCP_SERVERS, dict):
    MCP_SERVERS["remote"] = {"url": "${MCP_URL}", "oauth": {"client_name": "django-example"}}
MCP_DEFAULTS = {"timeout": float(os.environ.get("MCP_TIMEOUT", "20"))}  # below gunicorn's 30 s
MCP_TOKEN_KEY = os.environ.get("MCP_TOKEN_KEY")
#: The example's stand-in for a real login page (never in production): /login?user=NAME.
DEMO_LOGIN = os.environ.get("MCPSITE_DEMO_LOGIN") == "1"
