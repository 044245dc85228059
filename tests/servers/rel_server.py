"""A threaded standard-library MCP stdio server for the reliability tests.

Tools (all take their input from ``arguments``):

* ``echo(text)``: returns ``text`` at once, from the reading thread.
* ``slow(text, ms)``: returns ``text`` after ``ms`` milliseconds, from its own thread, so slow
  calls never hold up fast ones. If the client cancels it first, the reply is still sent when
  ``text`` ends in ``!late`` (a late reply the client must drop) and suppressed otherwise.
* ``flood(count, size)``: writes ``count`` ``notifications/message`` lines of about ``size``
  bytes, then the reply (``"flooded"``); everything goes out in large writes, as fast as the
  pipe takes it.
* ``cancel_flood(count)``: writes ``count`` ``notifications/cancelled`` for request ids the
  client never saw, then the reply (``"flooded"``).
* ``raw(b64)``: writes the base64-decoded bytes to stdout as they are, then the reply
  (``"raw"``): fuzzing the client's reader with whatever a broken server might send.
* ``pid()``: returns the server's process id as text.

With ``--liveness-port P`` the server connects to ``127.0.0.1:P`` and sends ``"server <pid>\\n"``;
the socket reaching EOF tells the test the process is gone (observed from outside).
With ``--linger S`` it keeps running ``S`` seconds after stdin reaches EOF (a server that does not
exit when its client goes away, which only a signal from the client stops).

Run: ``python tests/servers/rel_server.py [--liveness-port P]``.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import sys
import threading
import time
from typing import Any

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}} for name in ("echo", "slow", "flood", "cancel_flood", "raw", "pid")
]

_write_lock = threading.Lock()
_cancelled: set[Any] = set()
_cancel_lock = threading.Lock()


def write(data: bytes) -> None:
    with _write_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def reply(request_id: Any, result: dict[str, Any] | None = None, error: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        message["error"] = error
    else:
        message["result"] = result
    return json.dumps(message).encode() + b"\n"


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def slow(request_id: Any, text: str, ms: float) -> None:
    time.sleep(ms / 1000)
    with _cancel_lock:
        cancelled = request_id in _cancelled
        _cancelled.discard(request_id)
    if cancelled and not text.endswith("!late"):
        return
    write(reply(request_id, text_result(text)))


def flood(request_id: Any, count: int, size: int) -> None:
    note = json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x" * size}}
    ).encode() + b"\n"
    batch = max(1, (1 << 16) // len(note))
    sent = 0
    while sent < count:
        n = min(batch, count - sent)
        write(note * n)
        sent += n
    write(reply(request_id, text_result("flooded")))


def cancel_flood(request_id: Any, count: int) -> None:
    chunk: list[bytes] = []
    for n in range(count):
        params = {"requestId": f"never-sent-{n}", "reason": "flood"}
        chunk.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}).encode())
        if len(chunk) == 500:
            write(b"\n".join(chunk) + b"\n")
            chunk = []
    if chunk:
        write(b"\n".join(chunk) + b"\n")
    write(reply(request_id, text_result("flooded")))


def handle(message: dict[str, Any]) -> None:
    method = message.get("method")
    params = message.get("params") or {}
    if "id" not in message:
        if method == "notifications/cancelled":
            with _cancel_lock:
                _cancelled.add(params.get("requestId"))
        return
    request_id = message["id"]
    if method == "initialize":
        requested = params.get("protocolVersion")
        write(
            reply(
                request_id,
                {
                    "protocolVersion": requested if requested in VERSIONS else VERSIONS[-1],
                    "capabilities": {"tools": {}, "logging": {}},
                    "serverInfo": {"name": "rel-server", "version": "1.0"},
                },
            )
        )
    elif method in ("ping", "logging/setLevel"):
        write(reply(request_id, {}))
    elif method == "tools/list":
        write(reply(request_id, {"tools": TOOLS}))
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            write(reply(request_id, text_result(str(args.get("text", "")))))
        elif name == "slow":
            threading.Thread(
                target=slow, args=(request_id, str(args.get("text", "")), float(args.get("ms", 10))), daemon=True
            ).start()
        elif name == "flood":
            threading.Thread(
                target=flood, args=(request_id, int(args.get("count", 1)), int(args.get("size", 10))), daemon=True
            ).start()
        elif name == "cancel_flood":
            threading.Thread(target=cancel_flood, args=(request_id, int(args.get("count", 1))), daemon=True).start()
        elif name == "raw":
            write(base64.b64decode(str(args.get("b64", ""))) + b"\n" + reply(request_id, text_result("raw")))
        elif name == "pid":
            write(reply(request_id, text_result(str(os.getpid()))))
        else:
            write(reply(request_id, error={"code": -32602, "message": f"unknown tool {name}"}))
    else:
        write(reply(request_id, error={"code": -32601, "message": f"Method not found: {method}"}))


def main() -> None:
    liveness = None
    if "--liveness-port" in sys.argv:
        port = int(sys.argv[sys.argv.index("--liveness-port") + 1])
        liveness = socket.create_connection(("127.0.0.1", port))
        liveness.sendall(f"server {os.getpid()}\n".encode())
    for line in sys.stdin.buffer:
        if line.strip():
            handle(json.loads(line))
    if "--linger" in sys.argv:
        time.sleep(float(sys.argv[sys.argv.index("--linger") + 1]))
    del liveness  # closed by process exit in any case


if __name__ == "__main__":
    main()
