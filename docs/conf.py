"""Sphinx configuration for the mcpsync documentation.

Build with ``sphinx-build -W -b html . _build/html`` (warnings are errors) and
run the examples with ``sphinx-build -W -b doctest . _build/doctest``.
Nothing here touches the network.
"""

from __future__ import annotations

import os
import sys

# Document the source tree next to this file, not whatever mcpsync happens to
# be installed, so a docs build always matches the checkout.
sys.path.insert(0, os.path.abspath(".."))

import mcpsync

project = "mcpsync"
author = "The mcpsync developers"
copyright = "the mcpsync developers"
version = mcpsync.__version__
release = mcpsync.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "sphinx.ext.doctest",
]

# intersphinx is enabled for explicit external links only: no mapping is
# configured because fetching inventories would make the build need network.
intersphinx_mapping: dict[str, tuple[str, str | None]] = {}

# Unresolvable references (e.g. to classes of the standard library without an
# inventory) must not fail the -W build.
nitpicky = False

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
root_doc = "index"
language = "en"

autodoc_member_order = "bysource"
# "Bases:" is switched on per directive in api.rst (exceptions, transports):
# on plain classes it would only ever say "object".
autodoc_typehints = "signature"
autoclass_content = "class"

# Doctests import mcpsync from the checkout; each group starts clean.
doctest_global_setup = """
import mcpsync
"""

html_theme = "alabaster"
html_theme_options = {
    "description": "A synchronous, threaded MCP client for Python",
    "fixed_sidebar": True,
}
html_static_path: list[str] = []


def _check_api_lists_every_exception(app: object) -> None:
    """Warn (failing the -W build) when api.rst misses a public exception."""
    from sphinx.util import logging as sphinx_logging

    import mcpsync

    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "api.rst"), encoding="utf-8") as f:
        text = f.read()
    for name in mcpsync.__all__:
        obj = getattr(mcpsync, name)
        if isinstance(obj, type) and issubclass(obj, BaseException) and f":: mcpsync.{name}\n" not in text:
            sphinx_logging.getLogger(__name__).warning(
                "api.rst does not document mcpsync.%s (add it to the Exceptions list)", name
            )


def setup(app: object) -> None:
    app.connect("builder-inited", _check_api_lists_every_exception)  # type: ignore[attr-defined]
