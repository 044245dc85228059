"""The errors the server engine answers with: the JSON-RPC codes it uses, :class:`RpcError`
(a JSON-RPC error reply) and :class:`ClientRequestError` (the client refused a server->client
request).

At the bottom of the engine so every part can raise them without importing each other.
"""

from __future__ import annotations

from typing import Any


PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
RESOURCE_NOT_FOUND, MISSING_CAPABILITY, UNSUPPORTED_VERSION = -32002, -32021, -32022


class RpcError(Exception):
    """A JSON-RPC error: raise it from a handler to answer with this error.

    Also raised by :meth:`ToolContext.request` when the client answers with an error.

    :param code: the JSON-RPC error code, e.g. ``-32602``.
    :param message: the error message.
    :param data: optional ``data`` member.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.code, self.message, self.data = code, message, data

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def to_wire(self) -> dict[str, Any]:
        """The ``error`` member of a JSON-RPC response."""
        return {"code": self.code, "message": self.message, **({"data": self.data} if self.data is not None else {})}


class ClientRequestError(RpcError):
    """The client answered a server→client request (sampling, elicitation, roots) with an error.

    Raised by :meth:`ToolContext.request` and friends; a tool that lets it
    escape returns ``isError: true`` (unlike a plain :class:`RpcError`).
    """


def internal_error(exc: BaseException) -> RpcError:
    """The -32603 answer for an exception that was not meant as a JSON-RPC error."""
    return RpcError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
