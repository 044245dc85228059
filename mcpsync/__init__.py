"""mcpsync: a synchronous, threaded client for the Model Context Protocol."""

from __future__ import annotations

import logging

from .exceptions import *  # noqa: F401,F403
from .exceptions import __all__ as _exc_all

__version__ = "0.1.0"

__all__ = ["__version__", *_exc_all]

logging.getLogger(__name__).addHandler(logging.NullHandler())
