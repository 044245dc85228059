"""One stateless-era (2026-07-28) request as the server engine sees it: :class:`ModernCall`.

A modern request carries its protocol version, client capabilities, client info and log level
in ``params._meta``; there is no ``initialize``.  Multi Round-Trip Requests are done the simple,
stateless way: a tool that asks the client something (``ctx.sample``/``ctx.elicit``/
``ctx.list_roots``) and has no answer yet raises :class:`InputRequired`; the call is answered
with ``resultType: "input_required"``, and the client's retry runs the tool function again from
the start with every answer collected so far (carried in ``requestState``).  The n-th question
of a run always has the same key, so a tool that asks the same questions in the same order sees
its answers.

Also the opaque tokens the engine hands out (``requestState``, list cursors).
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from typing import Any

from mcpsync.testing.server.errors import INVALID_PARAMS, RpcError
from mcpsync.types.modern import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY
from mcpsync.types.protocol import LOGGING_LEVELS
from mcpsync.types.tasks import TASKS_EXTENSION_ID


def encode_token(value: Any) -> str:
    """An opaque token carrying *value* (JSON) for the client to hand back."""
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode("ascii")


def decode_token(token: Any, what: str) -> Any:
    """The value of a token made by :func:`encode_token`; -32602 ``invalid <what>`` if it is not one."""
    try:
        return json.loads(base64.urlsafe_b64decode(str(token).encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise RpcError(INVALID_PARAMS, f"invalid {what}") from None


class InputRequired(Exception):
    """Raised inside a tool by :meth:`ModernCall.answer`: the client must answer *request* first."""

    def __init__(self, call: ModernCall, key: str, method: str, params: dict[str, Any] | None) -> None:
        super().__init__(key, method)
        self.call, self.key = call, key
        self.request: dict[str, Any] = {"method": method, "params": params or {}}

    def result(self) -> dict[str, Any]:
        """The ``input_required`` result asking for this, carrying the answers so far."""
        return {"resultType": "input_required", "inputRequests": {self.key: self.request},
                "requestState": encode_token(self.call.answers)}


class ModernCall:
    """The modern-era side of one request: what its ``_meta`` said, and MRTR answers.

    :raises RpcError: -32602 for a ``requestState`` this engine did not write.
    """

    def __init__(self, meta: dict[str, Any], params: dict[str, Any]) -> None:
        caps, info, level = (meta.get(k) for k in (CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY))
        self.version = str(meta.get(PROTOCOL_VERSION_KEY))
        self.client_capabilities: dict[str, Any] = caps if isinstance(caps, dict) else {}
        self.client_info: dict[str, Any] = info if isinstance(info, dict) else {}
        #: ``None``: the request did not ask for log messages, so none may be sent.
        self.log_level: str | None = level if level in LOGGING_LEVELS else None
        state = params.get("requestState")
        self.answers: dict[str, Any] = {} if state is None else decode_token(state, "requestState")
        if not isinstance(self.answers, dict):
            raise RpcError(INVALID_PARAMS, "invalid requestState")
        if isinstance(responses := params.get("inputResponses"), dict):
            self.answers.update(responses)
        self._asked = 0
        self._lock = threading.Lock()

    @classmethod
    def of(cls, params: dict[str, Any]) -> ModernCall | None:
        """The modern side of a request with *params*; ``None`` for a handshake-era request."""
        meta = params.get("_meta")
        return cls(meta, params) if isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta else None

    @property
    def declares_tasks(self) -> bool:
        """Whether this request declared the tasks extension in its client capabilities."""
        extensions = self.client_capabilities.get("extensions")
        return isinstance(extensions, dict) and TASKS_EXTENSION_ID in extensions

    def answer(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The client's answer to this run's next question; raises :class:`InputRequired` if none yet."""
        with self._lock:
            self._asked += 1
            key = f"{method.replace('/', '-')}-{self._asked}"
        found = self.answers.get(key)
        if isinstance(found, dict):
            return found
        raise InputRequired(self, key, method, params)
