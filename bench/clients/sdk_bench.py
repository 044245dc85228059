"""The official Python SDK ``mcp``, run from bench/.venv-sdk.

``async``: driven by asyncio directly.  ``thread``: driven from synchronous
code through one background event-loop thread (``run_coroutine_threadsafe``),
which is what synchronous users of the SDK do today.
"""

import asyncio
import concurrent.futures
import contextlib
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as c  # noqa: E402

ADD = {"a": 1, "b": 2}


@contextlib.asynccontextmanager
async def connect(a):
    from mcp.client.session import ClientSession

    if "port" in a:
        base = "http://127.0.0.1:%d" % a["port"]
        if a["mode"] == "legacy":
            from mcp.client.sse import sse_client

            transport = sse_client(base + "/legacy/sse")
        else:
            from mcp.client.streamable_http import streamable_http_client

            transport = streamable_http_client(base + "/" + a["mode"], terminate_on_close=False)
    else:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        argv = c.server_argv()
        transport = stdio_client(StdioServerParameters(command=argv[0], args=argv[1:]))
    async with transport as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            await session.list_tools()
            yield session


async def run_async(workload, a):
    if workload == "rss":
        async with contextlib.AsyncExitStack() as stack:
            for _ in range(a["n"]):
                await stack.enter_async_context(connect(a))
            return {"mb": c.rss_mb()}
    async with connect(a) as session:
        if workload == "cold":
            return None
        if workload in ("seq", "http"):
            for _ in range(200):
                await session.call_tool("add", ADD)
            lat = []
            end = time.perf_counter() + a["duration"]
            start = time.perf_counter()
            while True:
                t0 = time.perf_counter()
                await session.call_tool("add", ADD)
                t1 = time.perf_counter()
                lat.append(t1 - t0)
                if t1 >= end:
                    break
            elapsed = time.perf_counter() - start
            lat.sort()
            return {"rate": len(lat) / elapsed, "p50_us": c.pct(lat, 0.5) * 1e6, "p99_us": c.pct(lat, 0.99) * 1e6}
        if workload == "threads":
            # Eight concurrent tasks: the asyncio counterpart of eight threads.
            stop = time.perf_counter() + a["duration"]
            counts = [0] * a["threads"]

            async def task(i):
                while time.perf_counter() < stop:
                    await session.call_tool("add", ADD)
                    counts[i] += 1

            start = time.perf_counter()
            await asyncio.gather(*(task(i) for i in range(a["threads"])))
            return {"rate": sum(counts) / (time.perf_counter() - start)}
        if workload == "echo":
            out = {}
            for size in a["sizes"]:
                text = "x" * size
                times = []
                for i in range(a["reps"] + 1):
                    t0 = time.perf_counter()
                    got = await session.call_tool("echo", {"text": text})
                    if i:
                        times.append(time.perf_counter() - t0)
                    assert len(got.content[0].text) == len(text)
                times.sort()
                out[str(size)] = {"ms": times[len(times) // 2] * 1e3}
            return out
    raise ValueError(workload)


def run_thread(workload, a):
    """Synchronous callers, one event-loop thread doing the I/O."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="sdk-loop", daemon=True)
    thread.start()
    opened = concurrent.futures.Future()
    done = asyncio.Event()

    async def hold():
        # anyio scopes must be left by the task that entered them.
        async with connect(a) as session:
            opened.set_result(session)
            await done.wait()

    held = asyncio.run_coroutine_threadsafe(hold(), loop)
    session = opened.result()

    def call(name="add", arguments=ADD):
        return asyncio.run_coroutine_threadsafe(session.call_tool(name, arguments), loop).result()

    try:
        if workload in ("seq", "http"):
            return c.sequential(call, a["duration"])
        if workload == "threads":
            return c.threaded(call, a["duration"], a["threads"])
        if workload == "echo":
            return c.echo_sizes(lambda text: call("echo", {"text": text}), a["sizes"], a["reps"])
        return None
    finally:
        loop.call_soon_threadsafe(done.set)
        held.result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()


def main():
    impl, workload, a = c.args()
    if impl == "thread" and workload not in ("cold", "rss"):
        result = run_thread(workload, a)
    else:
        result = asyncio.run(run_async(workload, a))
    if result is not None:
        c.emit(result)


if __name__ == "__main__":
    main()
