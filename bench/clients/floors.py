"""The floors: hand-written clients with no abstraction to pay for.

stdio: ``inline`` writes a line and reads a line in the calling thread;
``threaded`` adds one reader thread that demultiplexes replies by id (what
a thread-safe client must at least do).  HTTP: ``requests`` is a bare
``requests.Session`` POST loop, ``httpclient`` the stdlib ``http.client``.
"""

import itertools
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as c  # noqa: E402

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "floor", "version": "1"}}


class Inline:
    def __init__(self):
        self.proc = subprocess.Popen(c.server_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ids = itertools.count(1)
        self.handshake()

    def handshake(self):
        self.call("initialize", INIT)
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, msg):
        self.proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method, params=None):
        rid = next(self.ids)
        self.write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        return json.loads(self.proc.stdout.readline())["result"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


class Threaded(Inline):
    def __init__(self):
        self.pending = {}
        self.lock = threading.Lock()
        self.wlock = threading.Lock()
        self.proc = subprocess.Popen(c.server_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ids = itertools.count(1)
        self.reader = threading.Thread(target=self.read_loop, name="floor-reader", daemon=True)
        self.reader.start()
        self.handshake()

    def read_loop(self):
        for line in self.proc.stdout:
            msg = json.loads(line)
            with self.lock:
                slot = self.pending.pop(msg.get("id"), None)
            if slot is not None:
                slot[1] = msg
                slot[0].release()

    def write(self, msg):
        data = json.dumps(msg, separators=(",", ":")).encode() + b"\n"
        with self.wlock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def call(self, method, params=None, timeout=None):
        rid = next(self.ids)
        done = threading.Lock()
        done.acquire()
        slot = [done, None]
        with self.lock:
            self.pending[rid] = slot
        self.write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        if timeout is None:
            done.acquire()
        elif not done.acquire(timeout=timeout):  # the least a deadline costs: a timed wait
            with self.lock:
                self.pending.pop(rid, None)
            raise TimeoutError(method)
        return slot[1]["result"]

    def close(self):
        super().close()
        self.reader.join()


class Http:
    """One MCP connection over HTTP; ``mode`` is json, sse or legacy."""

    def __init__(self, port, mode, lib):
        self.port, self.mode, self.lib = port, mode, lib
        self.ids = itertools.count(1)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if lib == "requests":
            import requests

            self.session = requests.Session()
        else:
            import http.client

            self.conn = http.client.HTTPConnection("127.0.0.1", port)
        self.path = "/" + mode
        if mode == "legacy":
            import http.client

            self.stream = http.client.HTTPConnection("127.0.0.1", port)
            self.stream.request("GET", "/legacy/sse", headers={"Accept": "text/event-stream"})
            self.events = self.stream.getresponse()
            self.path = self.next_event()
        self.call("initialize", INIT)
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def next_event(self):
        data = []
        while True:
            line = self.events.readline().rstrip(b"\r\n")
            if not line:
                if data:
                    return b"\n".join(data).decode()
                continue
            if line.startswith(b"data:"):
                data.append(line[5:].lstrip(b" "))

    def post(self, msg):
        body = json.dumps(msg, separators=(",", ":")).encode()
        if self.lib == "requests":
            r = self.session.post("http://127.0.0.1:%d%s" % (self.port, self.path), data=body, headers=self.headers)
            return r.headers.get("Content-Type", ""), r.content
        self.conn.request("POST", self.path, body=body, headers=self.headers)
        r = self.conn.getresponse()
        return r.getheader("Content-Type", ""), r.read()

    def call(self, method, params=None):
        ctype, body = self.post({"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params or {}})
        if self.mode == "legacy":
            return json.loads(self.next_event())["result"]
        if ctype.startswith("text/event-stream"):
            for line in body.split(b"\n"):
                if line.startswith(b"data:"):
                    return json.loads(line[5:])["result"]
        return json.loads(body)["result"]

    def close(self):
        if self.mode == "legacy":
            self.stream.close()


def main():
    impl, workload, a = c.args()
    if workload == "http-threads":
        # The floor for one shared client: every thread with a connection of its own.
        add = {"name": "add", "arguments": {"a": 1, "b": 2}}
        clients = []

        def own(i):
            client = Http(a["port"], a["mode"], impl)
            clients.append(client)
            return lambda: client.call("tools/call", add)

        c.emit(c.threaded(None, a["duration"], a["threads"], per_thread=own))
        for client in clients:
            client.close()
        return
    if workload == "http":
        client = Http(a["port"], a["mode"], impl)
        client.call("tools/list")
        c.emit(c.sequential(lambda: client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}), a["duration"]))
        client.close()
        return
    cls = Inline if impl == "inline" else Threaded
    if workload == "cold":
        client = cls()
        client.call("tools/list")
        client.close()
    elif workload == "rss":
        clients = [cls() for _ in range(a["n"])]
        for client in clients:
            client.call("tools/list")
        c.emit(c.thread_counts(a["n"], dict(mb=c.rss_mb())))
        for client in clients:
            client.close()
    else:
        client = cls()
        add = {"name": "add", "arguments": {"a": 1, "b": 2}}
        if workload == "seq":
            c.emit(c.sequential(lambda: client.call("tools/call", add), a["duration"]))
        elif workload == "threads":
            c.emit(c.threaded(lambda: client.call("tools/call", add), a["duration"], a["threads"]))
        elif workload == "deadline":
            t = a["timeout"]
            c.emit(c.threaded(lambda: client.call("tools/call", add, timeout=t), a["duration"], a["threads"]))
        elif workload == "echo":

            def echo(text):
                got = client.call("tools/call", {"name": "echo", "arguments": {"text": text}})
                assert len(got["content"][0]["text"]) == len(text)

            c.emit(c.echo_sizes(echo, a["sizes"], a["reps"]))
        client.close()


if __name__ == "__main__":
    main()
