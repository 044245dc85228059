"""One stateless-era (2026-07-28) request as the server engine sees it: :class:`ModernCall`
(its ``_meta`` and the Multi Round-Trip answers collected so far) and :class:`InputRequired`.

Below :mod:`.context` and :mod:`.modern`, which both use it.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from typing import Any

from mcpsync.testing.server.errors import RpcError
from mcpsync.types.modern import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    PROTOCOL_VERSION_KEY,
)
from mcpsync.types.protocol import LOGGING_LEVELS

__all__ = ["InputRequired", "ModernCall", "modern_info"]

_INVALID_PARAMS = -32602


class InputRequired(Exception):
    """Raised inside a tool by :class:`ModernCall`: the client must answer *request* first."""

    def __init__(self, key: str, method: str, params: dict[str, Any] | None) -> None:
        super().__init__(key, method)
        self.key = key
        self.request: dict[str, Any] = {"method": method, "params": params or {}}


class ModernCall:
    """The modern-era side of one request: what its ``_meta`` said, and MRTR answers."""

    def __init__(self, meta: dict[str, Any], params: dict[str, Any]) -> None:
        caps = meta.get(CLIENT_CAPABILITIES_KEY)
        info = meta.get(CLIENT_INFO_KEY)
        level = meta.get(LOG_LEVEL_KEY)
        self.version = str(meta.get(PROTOCOL_VERSION_KEY))
        self.client_capabilities: dict[str, Any] = caps if isinstance(caps, dict) else {}
        self.client_info: dict[str, Any] = info if isinstance(info, dict) else {}
        #: ``None``: the request did not ask for log messages, so none may be sent.
        self.log_level: str | None = level if level in LOGGING_LEVELS else None
        self.answers: dict[str, Any] = _decode_state(params.get("requestState"))
        responses = params.get("inputResponses")
        if isinstance(responses, dict):
            self.answers.update(responses)
        self._asked = 0
        self._lock = threading.Lock()

    def answer(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The client's answer to this run's next question; raises :class:`InputRequired` if none yet."""
        with self._lock:
            self._asked += 1
            key = f"{method.replace('/', '-')}-{self._asked}"
        found = self.answers.get(key)
        if isinstance(found, dict):
            return found
        raise InputRequired(key, method, params)

    def input_required(self, needed: InputRequired) -> dict[str, Any]:
        """The ``input_required`` result asking for *needed*, carrying the answers so far."""
        return {
            "resultType": "input_required",
            "inputRequests": {needed.key: needed.request},
            "requestState": _encode_state(self.answers),
        }


def _encode_state(answers: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(answers, separators=(",", ":")).encode()).decode("ascii")


def _decode_state(state: Any) -> dict[str, Any]:
    if state is None:
        return {}
    try:
        decoded = json.loads(base64.urlsafe_b64decode(str(state).encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise RpcError(_INVALID_PARAMS, "invalid requestState") from None
    if not isinstance(decoded, dict):
        raise RpcError(_INVALID_PARAMS, "invalid requestState")
    return decoded


def modern_info(params: dict[str, Any]) -> ModernCall | None:
    """A :class:`ModernCall` when *params* carry a modern ``_meta``; else ``None`` (handshake era)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or PROTOCOL_VERSION_KEY not in meta:
        return None
    return ModernCall(meta, params)
