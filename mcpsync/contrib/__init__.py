"""Integrations with web frameworks (optional extras).

* :mod:`mcpsync.contrib.django`: the ``django`` extra (see ``docs/django.rst``);
* :mod:`mcpsync.contrib.flask`: the ``flask`` extra (see ``docs/flask.rst``).

:func:`generate_key` makes the ``MCP_TOKEN_KEY`` both use:
``python -c 'from mcpsync.contrib import generate_key; print(generate_key())'``.

What both share lives in the modules here: the server set read from an
``mcpServers``-shaped setting (:mod:`._server_set`), encryption of token records
(:mod:`._cipher`), per-user OAuth (:mod:`._useroauth`), the CLI bridge
(:mod:`._cli`) and the MCP Apps host pages (:mod:`.apps`, with their HTML and
JavaScript).  Nothing here imports a framework.

May import: anything in mcpsync (it is the top layer); a framework only in its own
subpackage, and only when that integration is used.
"""

from ._cipher import generate_key

__all__ = ["generate_key"]
