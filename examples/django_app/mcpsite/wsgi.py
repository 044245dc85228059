"""WSGI entry point: ``gunicorn --preload -w 4 --threads 8 mcpsite.wsgi`` (from examples/django_app).

``--preload`` imports the site (and checks MCP_SERVERS) once in the master;
no MCP server starts there: each worker starts its own on its first request.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcpsite.settings")
application = get_wsgi_application()
