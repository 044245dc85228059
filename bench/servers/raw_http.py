"""A raw HTTP/1.1 MCP server on 127.0.0.1 with canned replies (those of ``raw_stdio.py``).

One thread per connection, keep-alive, hand-parsed requests; no JSON is parsed or
dumped per call but ``echo``'s.  Paths:

* ``POST /json``: Streamable HTTP, every reply ``application/json``;
* ``POST /sse``: Streamable HTTP, every reply one event on a chunked
  ``text/event-stream`` response;
* ``GET /legacy/sse`` + ``POST /legacy/message?sid=N``: the legacy HTTP+SSE
  transport (``endpoint`` event, ``202`` to the POST, reply on the stream).

Prints ``PORT <n>`` on stdout once listening; runs until stdin closes.
"""

import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raw_stdio import reply  # noqa: E402

_streams = {}
_streams_lock = threading.Lock()
_sids = iter(range(1, 1 << 30))


def reply_for(body):
    data = reply(body)
    return None if data is None else data[:-1]  # without the newline


def response(status, ctype=None, body=b""):
    head = "HTTP/1.1 %s\r\nContent-Length: %d\r\n" % (status, len(body))
    if ctype:
        head += "Content-Type: %s\r\n" % ctype
    return head.encode() + b"\r\n" + body


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


def serve(conn):
    rfile = conn.makefile("rb", buffering=65536)
    try:
        while True:
            line = rfile.readline(65537)
            if not line:
                return
            method, target, _ = line.decode("latin-1").split(" ", 2)
            length = 0
            while True:
                h = rfile.readline(65537)
                if h in (b"\r\n", b"\n", b""):
                    break
                name, _, value = h.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = rfile.read(length) if length else b""
            path, _, query = target.partition("?")
            if method == "POST" and path == "/json":
                data = reply_for(body)
                if data is None:
                    conn.sendall(response("202 Accepted"))
                else:
                    conn.sendall(response("200 OK", "application/json", data))
            elif method == "POST" and path == "/sse":
                data = reply_for(body)
                if data is None:
                    conn.sendall(response("202 Accepted"))
                else:
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                        b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + chunk(b"event: message\ndata: " + data + b"\n\n")
                        + b"0\r\n\r\n"
                    )
            elif method == "GET" and path == "/legacy/sse":
                sid = next(_sids)
                lock = threading.Lock()
                with _streams_lock:
                    _streams[str(sid)] = (conn, lock)
                with lock:
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                        b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + chunk(b"event: endpoint\ndata: /legacy/message?sid=%d\n\n" % sid)
                    )
                rfile.read()  # hold the stream until the client hangs up
                return
            elif method == "POST" and path == "/legacy/message":
                sid = query.partition("sid=")[2]
                with _streams_lock:
                    stream = _streams.get(sid)
                if stream is None:
                    conn.sendall(response("404 Not Found"))
                    continue
                data = reply_for(body)
                conn.sendall(response("202 Accepted"))
                if data is not None:
                    with stream[1]:
                        stream[0].sendall(chunk(b"event: message\ndata: " + data + b"\n\n"))
            else:
                conn.sendall(response("405 Method Not Allowed"))
    except (OSError, ValueError):
        pass
    finally:
        conn.close()


def main():
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    sock.listen(128)

    def accept():
        while True:
            conn, _ = sock.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print("PORT", sock.getsockname()[1], flush=True)
    sys.stdin.read()  # the bench closes our stdin to stop us


if __name__ == "__main__":
    main()
