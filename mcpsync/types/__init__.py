"""Protocol types: attrs classes for every message a client sends or receives.

Python names are ``snake_case``; the wire is ``camelCase`` (``_meta`` is
``meta``). Every class keeps unknown wire keys in ``extra`` and sends them
back, so a newer server never breaks this client. Convert with
:func:`to_wire` and :func:`from_wire`::

    from mcpsync import types

    result = types.from_wire(types.CallToolResult, {"content": [{"type": "text", "text": "hi"}]})
    assert result.text == "hi"
    assert types.to_wire(types.TextContent("hi")) == {"type": "text", "text": "hi"}

.. versionadded:: 0.1
"""

from __future__ import annotations

from . import content, elicitation, lifecycle, misc, modern, prompts, resources, sampling, tools
from ._converter import converter, from_wire, to_wire, wire_name
from .content import *
from .elicitation import *
from .lifecycle import *
from .misc import *
from .modern import *
from .prompts import *
from .resources import *
from .sampling import *
from .tools import *

__all__ = [
    "converter",
    "to_wire",
    "from_wire",
    "wire_name",
    *lifecycle.__all__,
    *content.__all__,
    *tools.__all__,
    *resources.__all__,
    *prompts.__all__,
    *sampling.__all__,
    *elicitation.__all__,
    *misc.__all__,
    *modern.__all__,
]
