"""A tiny fault-injecting stdio MCP server (stdlib only) for the stdio fault tests.

Run as ``python fault_server.py [options]``.  By default it behaves: it answers
``initialize``, ``tools/list``, ``tools/call`` (tool ``echo``) and ``ping``, and
answers every other request with -32601 (so a client's ``server/discover``
probe falls back to the handshake).  It exits when stdin reaches EOF, unless
``--stay-after-eof``.

Faults are chosen two ways:

* ``--scenario NAME`` for the process as a whole, or as the default for every
  ``tools/call``: ``echo`` (default), ``exit_on_request``, ``exit_immediately``,
  ``banner_then_crash``, ``stderr_flood``, ``stderr_flood_nonl``, ``huge_reply``,
  ``no_newline_flood``, ``junk_lines``, ``nested``, ``malformed``, ``id_mutation``,
  ``never_respond``, ``delayed``, ``progress``, ``dribble``, ``pack``,
  ``final_no_newline``, ``no_read`` (never reads stdin).
* per call, through the ``arguments`` of ``tools/call`` (these override the
  scenario): ``{"exit": 3}``, ``{"never": true}``, ``{"delay": 0.2}``,
  ``{"size": N}``, ``{"stderr": N, "nonl": true}``, ``{"junk": true}``,
  ``{"nested": true}``, ``{"malformed": VARIANT}``, ``{"id_mutation": KIND}``,
  ``{"progress": {"every": S, "count": N}}``, ``{"dribble": true}``,
  ``{"pack": N}``, ``{"final_no_newline": true}``, ``{"getenv": NAME}`` (reply
  text is the JSON of that environment variable's value or null), ``{"block": S}``
  (stop reading stdin for S seconds, then reply).

Process options: ``--exit-code N``, ``--size N``, ``--sizes N,N,...`` (lines of
exactly those byte sizes written at start), ``--variant V``, ``--delay S``,
``--record PATH`` (one JSON line per received line: whether it parsed, method,
id, and small params), ``--strict-lines`` (exit 65 on an unparsable line),
``--liveness-port P`` (this process, and any child/grandchild it spawns, connects
to 127.0.0.1:P and sends ``<role> <pid>\\n``), ``--spawn-tree`` (start a child
that starts a grandchild; both inherit stdout/stderr and sleep),
``--ignore-sigterm``, ``--signal-log PATH`` (append the name of each SIGTERM
received), ``--stay-after-eof``, ``--start-delay S`` (read nothing for S seconds
after starting: a slow start).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

_OUT_LOCK = threading.Lock()
_REC_LOCK = threading.Lock()
_keep: list[Any] = []  # liveness sockets and children stay referenced for the process lifetime


def out(data: bytes) -> None:
    """Write raw bytes to stdout, whole, under a lock (reply threads share stdout)."""
    with _OUT_LOCK:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]


def send(obj: Any, *, end: bytes = b"\n") -> None:
    out(json.dumps(obj, separators=(",", ":")).encode() + end)


def sized_line(size: int) -> bytes:
    """A JSON notification line of exactly ``size`` bytes (newline excluded)."""
    head = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
    tail = b'"}}'
    pad = size - len(head) - len(tail)
    if pad < 0:
        raise ValueError("size too small")
    return head + b"x" * pad + tail


def liveness(port: int | None, role: str) -> None:
    if not port:
        return
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(f"{role} {os.getpid()}\n".encode())
    _keep.append(sock)


def run_descendant(role: str, port: int | None, opts: argparse.Namespace) -> None:
    """Child or grandchild of the server: hold the inherited pipes open and sleep."""
    liveness(port, role)
    if role == "child":
        _keep.append(spawn_descendant("grandchild", opts))
    while True:
        time.sleep(3600)


def spawn_descendant(role: str, opts: argparse.Namespace) -> subprocess.Popen[bytes]:
    argv = [sys.executable, os.path.abspath(__file__), "--role", role]
    if opts.liveness_port:
        argv += ["--liveness-port", str(opts.liveness_port)]
    # stdin/stdout/stderr inherited: this is what keeps a dead server's stdout open.
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL)


class Server:
    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.scenario: str = opts.scenario

    # -- recording ---------------------------------------------------------

    def record(self, entry: dict[str, Any]) -> None:
        if not self.opts.record:
            return
        line = json.dumps(entry) + "\n"
        with _REC_LOCK, open(self.opts.record, "a", encoding="utf-8") as f:
            f.write(line)

    # -- main loop ---------------------------------------------------------

    def serve(self) -> None:
        stdin = sys.stdin.buffer
        while True:
            raw = stdin.readline()
            if not raw:
                break
            try:
                msg = json.loads(raw)
            except ValueError:
                self.record({"valid": False, "len": len(raw)})
                if self.opts.strict_lines:
                    os._exit(65)
                continue
            entry: dict[str, Any] = {"valid": True, "len": len(raw)}
            if isinstance(msg, dict):
                entry["method"] = msg.get("method")
                entry["id"] = msg.get("id")
                if len(raw) < 4096:
                    entry["params"] = msg.get("params")
            self.record(entry)
            if isinstance(msg, dict) and "method" in msg:
                self.dispatch(msg)
        if self.opts.stay_after_eof:
            while True:
                time.sleep(3600)

    def dispatch(self, msg: dict[str, Any]) -> None:
        method, rid = msg["method"], msg.get("id")
        params = msg.get("params") or {}
        if rid is None:
            return  # a notification
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fault-server", "version": "1.0"},
            }})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [{
                "name": "echo", "description": "echo the arguments",
                "inputSchema": {"type": "object"},
            }]}})
        elif method == "tools/call":
            self.call(rid, params)
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": f"method not found: {method}"}})

    # -- tools/call faults -------------------------------------------------

    def call(self, rid: Any, params: dict[str, Any]) -> None:
        args = dict(params.get("arguments") or {})
        o, sc = self.opts, self.scenario
        defaults: dict[str, Any] = {
            "exit_on_request": {"exit": o.exit_code},
            "stderr_flood": {"stderr": o.size},
            "stderr_flood_nonl": {"stderr": o.size, "nonl": True},
            "huge_reply": {"size": o.size},
            "junk_lines": {"junk": True},
            "nested": {"nested": True},
            "malformed": {"malformed": o.variant},
            "id_mutation": {"id_mutation": o.variant},
            "never_respond": {"never": True},
            "delayed": {"delay": o.delay},
            "progress": {"progress": {"every": o.delay, "count": 3}},
            "dribble": {"dribble": True},
            "pack": {"pack": 3},
            "final_no_newline": {"final_no_newline": True},
        }.get(sc, {})
        for key, value in defaults.items():
            args.setdefault(key, value)
        token = ((params.get("_meta") or {}).get("progressToken"))
        if "block" in args:
            time.sleep(float(args["block"]))  # on the reading thread: stdin is not read meanwhile
        if "delay" in args or "progress" in args:
            threading.Thread(target=self.slow_reply, args=(rid, args, token), daemon=True).start()
            return
        self.reply(rid, args)

    def slow_reply(self, rid: Any, args: dict[str, Any], token: Any) -> None:
        prog = args.get("progress")
        if prog:
            for i in range(int(prog.get("count", 3))):
                time.sleep(float(prog.get("every", 0.1)))
                if token is not None:
                    send({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": i + 1}})
        else:
            time.sleep(float(args["delay"]))
        self.reply(rid, args)

    def reply(self, rid: Any, args: dict[str, Any]) -> None:
        if "exit" in args:
            os._exit(int(args["exit"]))
        if args.get("never"):
            return
        if args.get("stderr"):
            chunk = (b"x" * 99 + b"\n") if not args.get("nonl") else b"y" * 100
            data = chunk * (int(args["stderr"]) // 100)
            view = memoryview(data)
            while view:
                view = view[os.write(2, view) :]
        if args.get("junk"):
            out(b"npm warn exec The following package was not found\n\xff\xfe\n\n   \n"
                b"{not json}\n")
        if args.get("nested"):
            out(b"[" * 100_000 + b"]" * 100_000 + b"\n")
        if "getenv" in args:
            text = json.dumps(os.environ.get(str(args["getenv"])))
        elif "size" in args:
            text = "x" * int(args["size"])
        else:
            text = json.dumps(args, sort_keys=True)
        result = {"content": [{"type": "text", "text": text}], "isError": False}
        if "malformed" in args:
            send(malformed(rid, str(args["malformed"])))
            return
        if "id_mutation" in args:
            kind = str(args["id_mutation"])
            mutated = {"str": str(rid), "bool": True, "float": float(rid) if isinstance(rid, int) else rid,
                       "null": None, "unknown": 10_000_000, "zero": 0}.get(kind, rid)
            response = {"jsonrpc": "2.0", "id": mutated, "result": result}
            send(response)
            if kind == "duplicate":
                send(response)
            return
        response = {"jsonrpc": "2.0", "id": rid, "result": result}
        line = json.dumps(response, separators=(",", ":")).encode()
        end = b"\r\n" if args.get("junk") else b"\n"
        if args.get("dribble"):
            for i in range(len(line)):
                out(line[i : i + 1])
                time.sleep(0.001)
            out(end)
        elif args.get("pack"):
            note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                               "params": {"level": "info", "data": "packed"}}).encode() + b"\n"
            out(note * (int(args["pack"]) - 1) + line + end)
        elif args.get("final_no_newline"):
            out(line)
            os._exit(0)
        else:
            out(line + end)


def malformed(rid: Any, variant: str) -> dict[str, Any]:
    base: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
    if variant == "message_null":
        base["error"] = {"code": -32000, "message": None}
    elif variant == "error_string":
        base["error"] = "something broke"
    elif variant == "code_string":
        base["error"] = {"code": "-32000", "message": "bad code"}
    elif variant == "code_bool":
        base["error"] = {"code": True, "message": "bad code"}
    elif variant == "code_float":
        base["error"] = {"code": -32000.5, "message": "bad code"}
    elif variant == "both":
        base["result"] = {"content": []}
        base["error"] = {"code": -32000, "message": "both"}
    elif variant == "jsonrpc_1":
        base["jsonrpc"] = "1.0"
        base["result"] = {"content": []}
    # "neither": nothing but jsonrpc and id
    return base


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", default="echo")
    p.add_argument("--role", default="server")
    p.add_argument("--exit-code", type=int, default=3)
    p.add_argument("--size", type=int, default=256 * 1024)
    p.add_argument("--sizes", default="")
    p.add_argument("--variant", default="neither")
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--record")
    p.add_argument("--strict-lines", action="store_true")
    p.add_argument("--liveness-port", type=int)
    p.add_argument("--spawn-tree", action="store_true")
    p.add_argument("--ignore-sigterm", action="store_true")
    p.add_argument("--signal-log")
    p.add_argument("--stay-after-eof", action="store_true")
    p.add_argument("--start-delay", type=float, default=0.0)
    opts = p.parse_args()

    if opts.role != "server":
        run_descendant(opts.role, opts.liveness_port, opts)
        return

    def on_term(signum: int, frame: Any) -> None:
        if opts.signal_log:
            with open(opts.signal_log, "a", encoding="utf-8") as f:
                f.write("TERM\n")
        if not opts.ignore_sigterm:
            os._exit(128 + signum)

    if opts.signal_log or opts.ignore_sigterm:
        signal.signal(signal.SIGTERM, on_term)
    liveness(opts.liveness_port, "server")
    if opts.spawn_tree:
        _keep.append(spawn_descendant("child", opts))
    time.sleep(opts.start_delay)

    sc = opts.scenario
    if sc == "exit_immediately":
        os.write(2, b"fault-server: giving up at once\n")
        os._exit(opts.exit_code)
    if sc == "banner_then_crash":
        os.write(1, b"fault-server banner\n")
        os.write(2, b"fault-server: about to crash\n")
        os.abort()
    if sc == "no_read":  # never reads stdin: writes to it wedge once the pipe is full
        while True:
            time.sleep(3600)
    if sc == "no_newline_flood":
        chunk = b"z" * 65536
        for _ in range(opts.size // len(chunk)):
            try:
                out(chunk)
            except OSError:
                os._exit(0)  # the client closed the pipe: expected
    if opts.sizes:
        out(b"".join(sized_line(int(s)) + b"\n" for s in opts.sizes.split(",")))
    Server(opts).serve()


if __name__ == "__main__":
    main()
