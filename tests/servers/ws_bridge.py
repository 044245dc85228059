"""A WebSocket MCP server for the tests: WebSocket frames bridged to a real stdio MCP server.

Each WebSocket connection gets its own backend process (by default the official-SDK server
``sdk_server.py``), and every text frame is one JSON-RPC message, both ways, under the ``mcp``
subprotocol, as the TypeScript SDK's WebSocket transport does it. Served with the ``websockets``
package (asyncio). Prints ``LISTENING <port>`` on stdout once it accepts connections; stops
when its stdin closes (so a test process that dies takes it along).

Faults are chosen per connection by the query string of the URL:

``token=T``            refuse the upgrade with HTTP 401 unless ``Authorization: Bearer T``
``header=NAME:VALUE``  refuse the upgrade with HTTP 403 unless that header is present
``no_subprotocol=1``   do not select the ``mcp`` subprotocol
``junk=1``             before the first reply, send a binary frame, a non-JSON text frame and a
                       ping
``ping=S``             ping the client every S seconds, closing (1011) when no pong comes
``on=TOOL``            when a ``tools/call`` of TOOL arrives, do ``action`` instead of
                       forwarding it:
``action=close``       close with ``code`` (default 1011) and ``reason``
``action=abort``       drop the TCP connection without a close frame
``action=big``         send one text frame of ``size`` bytes
``action=fragments``   send one message of ``size`` bytes in 64 KiB fragments
``forward=1``          with ``on=``, also forward the call (so it is pending at the server)
``fragment=N``         send every message to the client in fragments of N characters
``redirect=URL``       answer the upgrade with 302 to URL

Usage: ``python ws_bridge.py [--certfile F --keyfile K] [--] [backend command ...]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import ssl
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

HERE = Path(__file__).resolve().parent
DEFAULT_BACKEND = [sys.executable, str(HERE / "sdk_server.py")]
BACKENDS: set[asyncio.subprocess.Process] = set()


def _query(connection: ServerConnection) -> dict[str, str]:
    assert connection.request is not None
    query = urllib.parse.urlsplit(connection.request.path).query
    return dict(urllib.parse.parse_qsl(query))


def check_request(connection: ServerConnection, request: Request) -> Response | None:
    """The upgrade checks: a bearer token or a header, as an auth proxy would do them."""
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(request.path).query))
    if "redirect" in query:
        response = connection.respond(302, "moved\n")
        response.headers["Location"] = query["redirect"]
        return response
    token = query.get("token")
    if token is not None and request.headers.get("Authorization") != f"Bearer {token}":
        return connection.respond(401, "missing or wrong bearer token\n")
    wanted = query.get("header")
    if wanted is not None:
        name, _, value = wanted.partition(":")
        if request.headers.get(name) != value:
            return connection.respond(403, f"header {name} missing\n")
    return None


def select_subprotocol(connection: ServerConnection, offered: Any) -> str | None:
    if _query(connection).get("no_subprotocol"):
        return None
    return "mcp" if "mcp" in offered else None


async def _fault(ws: ServerConnection, query: dict[str, str]) -> None:
    action = query.get("action", "close")
    if action == "close":
        await ws.close(int(query.get("code", "1011")), query.get("reason", "backend failed"))
    elif action == "abort":
        assert ws.transport is not None
        ws.transport.abort()
    elif action == "big":
        await ws.send("x" * int(query.get("size", "2000000")))
    elif action == "fragments":
        size, chunk = int(query.get("size", "2000000")), 65536
        await ws.send(["y" * min(chunk, size - i) for i in range(0, size, chunk)])


def _is_trigger(message: Any, query: dict[str, str]) -> bool:
    return (
        "on" in query
        and isinstance(message, dict)
        and message.get("method") == "tools/call"
        and (message.get("params") or {}).get("name") == query["on"]
    )


async def bridge(ws: ServerConnection, backend: list[str]) -> None:
    """Serve one connection: spawn the backend and pump messages both ways."""
    query = _query(ws)
    proc = await asyncio.create_subprocess_exec(
        *backend,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=64 * 1024 * 1024,
    )
    BACKENDS.add(proc)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    async def to_backend() -> None:
        async for frame in ws:
            if isinstance(frame, bytes):
                continue
            try:
                message = json.loads(frame)
            except ValueError:
                continue
            if _is_trigger(message, query):
                if query.get("forward"):
                    stdin.write(frame.encode() + b"\n")
                    await stdin.drain()
                await _fault(ws, query)
                continue
            stdin.write(frame.encode() + b"\n")
            await stdin.drain()

    async def to_client() -> None:
        if query.get("junk"):
            await ws.send(b"\x00binary")
            await ws.send("this is not JSON")
            await ws.ping()
        size = int(query.get("fragment", "0"))
        while line := await stdout.readline():
            text = line.decode().strip()
            if text and size:
                await ws.send([text[i : i + size] for i in range(0, len(text), size)])
            elif text:
                await ws.send(text)

    tasks = [asyncio.create_task(to_backend()), asyncio.create_task(to_client())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 3.0)
        except asyncio.TimeoutError:  # noqa: UP041 - not the builtin on Python 3.10
            proc.kill()
            await proc.wait()
        BACKENDS.discard(proc)
        await ws.close()


async def main_async(args: argparse.Namespace) -> None:
    backend = args.backend or DEFAULT_BACKEND
    tls: ssl.SSLContext | None = None
    if args.certfile:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.certfile, args.keyfile)

    async def handler(ws: ServerConnection) -> None:
        query = _query(ws)
        if "ping" in query:
            asyncio.create_task(_keepalive(ws, float(query["ping"])))
        await bridge(ws, backend)

    async with serve(
        handler,
        "127.0.0.1",
        0,
        ssl=tls,
        subprotocols=["mcp"],
        select_subprotocol=select_subprotocol,
        process_request=check_request,
        ping_interval=None,
        max_size=None,
        compression=None,
    ) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"LISTENING {port}", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # until the test process lets go
    for proc in list(BACKENDS):  # connections still open at exit
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


async def _keepalive(ws: ServerConnection, interval: float) -> None:
    """Ping like a proxy with an idle timeout: no pong within 1 s closes the connection."""
    while True:
        await asyncio.sleep(interval)
        try:
            waiter = await ws.ping()
            await asyncio.wait_for(waiter, 1.0)
        except asyncio.TimeoutError:  # noqa: UP041 - not the builtin on Python 3.10
            await ws.close(1011, "keepalive ping timeout")
            return
        except Exception:  # noqa: BLE001 - the connection is gone; the handler ends it
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--certfile")
    parser.add_argument("--keyfile")
    parser.add_argument("backend", nargs="*")
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
