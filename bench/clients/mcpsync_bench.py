"""mcpsync through its public, typed API (``Client.stdio`` / ``Client.http``)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as c  # noqa: E402

ADD = {"a": 1, "b": 2}


def main():
    impl, workload, a = c.args()
    import mcpsync

    if workload == "http":
        base = "http://127.0.0.1:%d" % a["port"]
        if a["mode"] == "legacy":
            client = mcpsync.Client.http(base + "/legacy/sse", transport="sse")
        else:
            client = mcpsync.Client.http(base + "/" + a["mode"], transport="streamable-http")
        with client:
            client.list_tools()
            c.emit(c.sequential(lambda: client.call_tool("add", ADD), a["duration"]))
        return
    argv = c.server_argv()
    if workload == "cold":
        with mcpsync.Client.stdio(argv) as client:
            client.list_tools()
    elif workload == "rss":
        clients = [mcpsync.Client.stdio(argv) for _ in range(a["n"])]
        for client in clients:
            client.list_tools()
        c.emit({"mb": c.rss_mb()})
        for client in clients:
            client.close()
    else:
        with mcpsync.Client.stdio(argv) as client:
            client.list_tools()
            if workload == "seq":
                c.emit(c.sequential(lambda: client.call_tool("add", ADD), a["duration"]))
            elif workload == "threads":
                c.emit(c.threaded(lambda: client.call_tool("add", ADD), a["duration"], a["threads"]))
            elif workload == "echo":

                def echo(text):
                    assert len(client.call_tool("echo", {"text": text}).text) == len(text)

                c.emit(c.echo_sizes(echo, a["sizes"], a["reps"]))


if __name__ == "__main__":
    main()
