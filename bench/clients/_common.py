"""Timing helpers shared by every bench client (standard library only).

Each client script is run as ``python <script> <impl> <workload> <json args>``
and prints one JSON object with its measurements on the last stdout line.
"""

import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STDIO_SERVER = os.path.join(os.path.dirname(HERE), "servers", "raw_stdio.py")


def server_argv():
    """The stdio server, without site-packages: the same cheap process for every client."""
    python = os.environ.get("BENCH_SERVER_PYTHON") or sys.executable
    return [python, "-S", STDIO_SERVER]


def pct(sorted_values, q):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def sequential(call, duration, warmup=200):
    """Call ``call()`` back to back for ``duration`` s: calls/s, p50 and p99 in µs."""
    for _ in range(warmup):
        call()
    lat = []
    clock = time.perf_counter
    end = clock() + duration
    start = clock()
    while True:
        t0 = clock()
        call()
        t1 = clock()
        lat.append(t1 - t0)
        if t1 >= end:
            break
    elapsed = clock() - start
    lat.sort()
    return {"rate": len(lat) / elapsed, "p50_us": pct(lat, 0.5) * 1e6, "p99_us": pct(lat, 0.99) * 1e6}


def threaded(call, duration, threads=8, warmup=50, per_thread=None):
    """``threads`` threads calling ``call()`` for ``duration`` s: total calls/s, p50 and p99 in µs.

    ``per_thread(i)``, if given, returns thread *i*'s own ``call`` (e.g. its own connection).
    """
    counts = [0] * threads
    lats = [[] for _ in range(threads)]
    go = threading.Barrier(threads + 1)
    stop = threading.Event()
    errors = []

    def work(i):
        try:
            fn = per_thread(i) if per_thread is not None else call
            for _ in range(warmup):
                fn()
            go.wait()
            n = 0
            lat = lats[i]
            clock = time.perf_counter
            while not stop.is_set():
                t0 = clock()
                fn()
                lat.append(clock() - t0)
                n += 1
            counts[i] = n
        except BaseException as exc:  # reported, never silently lost
            errors.append(repr(exc))
            go.abort()

    pool = [threading.Thread(target=work, args=(i,), name=f"bench-{i}") for i in range(threads)]
    for t in pool:
        t.start()
    go.wait()
    start = time.perf_counter()
    time.sleep(duration)
    stop.set()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(errors[0])
    lat = sorted(x for per in lats for x in per)
    return {"rate": sum(counts) / elapsed, "p50_us": pct(lat, 0.5) * 1e6, "p99_us": pct(lat, 0.99) * 1e6}


def timed(call, reps):
    """Median wall time of ``call()`` in ms over ``reps`` runs (after one warm-up)."""
    call()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    times.sort()
    return {"ms": times[len(times) // 2] * 1e3}


def echo_sizes(echo, sizes, reps):
    """``{size: {"ms": median}}`` for ``echo(text)`` with texts of each size."""
    out = {}
    for size in sizes:
        text = "x" * size
        out[str(size)] = timed(lambda: echo(text), reps)
    return out


def thread_counts(n, out):
    """Add to ``out``: threads per connection (besides this one) and process-wide threads.

    A process-wide thread (mcpsync's shared stderr drain) is counted apart: it
    is one for the process whatever the number of connections.
    """
    shared = sum(1 for t in threading.enumerate() if t.name == "mcpsync-stderr")
    out["shared"] = shared
    out["threads"] = (threading.active_count() - 1 - shared) / n
    return out


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def emit(result):
    print(json.dumps(result), flush=True)


def args():
    return sys.argv[1], sys.argv[2], json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
