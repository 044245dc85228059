"""mcpsync through its public, typed API (``Client.stdio`` / ``Client.http``)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as c  # noqa: E402

ADD = {"a": 1, "b": 2}


def main():
    impl, workload, a = c.args()
    import mcpsync

    if workload == "http-threads":
        # One Streamable HTTP client shared by every thread.
        base = "http://127.0.0.1:%d" % a["port"]
        with mcpsync.Client.http(base + "/" + a["mode"], transport="streamable-http") as client:
            client.list_tools()
            c.emit(c.threaded(lambda: client.call_tool("add", ADD), a["duration"], a["threads"]))
        return
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
        c.emit(c.thread_counts(a["n"], dict(mb=c.rss_mb())))
        for client in clients:
            client.close()
    elif workload == "group":
        c.emit(group(argv, a["n"]))
    else:
        with mcpsync.Client.stdio(argv) as client:
            client.list_tools()
            if workload == "seq":
                c.emit(c.sequential(lambda: client.call_tool("add", ADD), a["duration"]))
            elif workload == "threads":
                c.emit(c.threaded(lambda: client.call_tool("add", ADD), a["duration"], a["threads"]))
            elif workload == "deadline":
                t = a["timeout"]
                c.emit(c.threaded(lambda: client.call_tool("add", ADD, timeout=t), a["duration"], a["threads"]))
            elif workload == "echo":

                def echo(text):
                    assert len(client.call_tool("echo", {"text": text}).text) == len(text)

                c.emit(c.echo_sizes(echo, a["sizes"], a["reps"]))


def group(argv, n):
    """Connect and list the tools of ``n`` servers: one at a time (the slowest), then as a group."""
    import time

    import mcpsync

    # One untimed connect first: the process's first one pays for lazy imports and the
    # converter's hooks, which would make it "the slowest" and flatter the group.
    with mcpsync.Client.stdio(argv) as client:
        client.list_tools()
    single = []
    for _ in range(n):
        t0 = time.perf_counter()
        with mcpsync.Client.stdio(argv) as client:
            client.list_tools()
            single.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    with mcpsync.ClientGroup({f"s{i}": mcpsync.Client.stdio(argv) for i in range(n)}) as servers:
        assert len(servers.list_tools()) == 2 * n  # connects every server, in parallel
        together = time.perf_counter() - t0
    return {"group_ms": together * 1e3, "slowest_ms": max(single) * 1e3, "sum_ms": sum(single) * 1e3}


if __name__ == "__main__":
    main()
