"""Run the mcpsync benchmark suite: one command, interleaved, a Markdown table.

    python bench/run.py                 # full run (a few minutes on 2 cores)
    python bench/run.py --smoke --no-sdk --out /tmp/smoke.md   # seconds; CI

Every measurement is a fresh client process; rounds interleave all clients,
so a noisy neighbour hurts every column alike, and each cell is the median
over rounds.  The official SDK runs from its own virtualenv (bench/.venv-sdk,
created on first use); mcpsync runs from this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CLIENTS = os.path.join(HERE, "clients")
SDK_VENV = os.path.join(HERE, ".venv-sdk")
SDK_PYTHON = os.path.join(SDK_VENV, "bin", "python")
SDK_REQUIREMENT = "mcp==2.3.0"
MIB = 1 << 20

#: column key -> (label, script, impl)
IMPLS = {
    "inline": ("inline floor", "floors.py", "inline"),
    "threaded": ("threaded floor", "floors.py", "threaded"),
    "requests": ("requests floor", "floors.py", "requests"),
    "httpclient": ("http.client floor", "floors.py", "httpclient"),
    "mcpsync": ("mcpsync", "mcpsync_bench.py", "x"),
    "sdk": ("SDK (asyncio)", "sdk_bench.py", "async"),
    "sdk-thread": ("SDK (loop thread)", "sdk_bench.py", "thread"),
}
STDIO = ["inline", "threaded", "mcpsync", "sdk", "sdk-thread"]
HTTP = ["requests", "httpclient", "mcpsync", "sdk", "sdk-thread"]
#: Other checkouts of mcpsync (``--baseline [NAME=]DIR``, repeatable), column key -> path,
#: each measured as one more column by the same client scripts, interleaved: "before" and
#: "after" (or variants with one thing changed) in one run.
BASELINES: dict[str, str] = {}


def columns(impls: list[str], sdk: bool) -> list[str]:
    """*impls* without the SDK when it is off, with the baselines after mcpsync when set."""
    out = [i for i in impls if sdk or not i.startswith("sdk")]
    if "mcpsync" in out:
        at = out.index("mcpsync") + 1
        out[at:at] = list(BASELINES)
    return out


def ensure_sdk() -> None:
    if os.path.exists(SDK_PYTHON):
        return
    print(f"creating {SDK_VENV} with {SDK_REQUIREMENT} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", SDK_VENV], check=True)
    subprocess.run([SDK_PYTHON, "-m", "pip", "install", "-q", SDK_REQUIREMENT], check=True)


def compile_bytecode() -> None:
    """Write the .pyc files of every mcpsync tree measured, as installing a wheel does.

    The SDK and attrs/cattrs come from site-packages, which pip compiled at install time;
    a source checkout run with PYTHONDONTWRITEBYTECODE set (as some CI machines and
    sandboxes do) would otherwise compile mcpsync on every cold start and be timed for it.
    """
    for root in (ROOT, *BASELINES.values()):
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(root, "mcpsync")], check=True)


def run_client(impl: str, workload: str, args: dict, timeout: float = 300.0) -> tuple[dict | None, float]:
    """Run one client process; return its JSON result and its wall time."""
    _, script, sub = IMPLS[impl]
    python = SDK_PYTHON if impl.startswith("sdk") else sys.executable
    env = dict(os.environ, BENCH_SERVER_PYTHON=sys.executable)
    if not impl.startswith("sdk"):
        root = BASELINES.get(impl, ROOT)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    argv = [python, os.path.join(CLIENTS, script), sub, workload, json.dumps(args)]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{impl} {workload} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    lines = proc.stdout.strip().splitlines()
    return (json.loads(lines[-1]) if lines else None), wall


class HttpServer:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-S", os.path.join(HERE, "servers", "raw_http.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.port = int(self.proc.stdout.readline().split()[1])

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.terminate()
        self.proc.wait(5)


def plan(smoke: bool, sdk: bool) -> list[tuple[str, str, dict]]:
    """(case, impl, args) for one round."""
    duration = 0.05 if smoke else 1.0
    sizes = [64 * 1024] if smoke else [MIB, 10 * MIB, 20 * MIB]
    stdio, http = columns(STDIO, sdk), columns(HTTP, sdk)
    ours = columns(["mcpsync"], sdk)
    cases: list[tuple[str, str, dict]] = []
    cases += [("cold", i, {}) for i in stdio if i != "sdk-thread"]
    cases += [("seq", i, {"duration": duration}) for i in stdio]
    cases += [("threads", i, {"duration": duration, "threads": 8}) for i in stdio if i != "inline"]
    # Short per-call timeouts: the deadline bookkeeping must stay cheap (the floor: a timed wait).
    cases += [("deadline", i, {"duration": duration, "threads": 8, "timeout": 0.25}) for i in ("threaded", *ours)]
    cases += [("group", i, {"n": 2 if smoke else 10}) for i in ours]
    cases += [("echo", i, {"sizes": sizes, "reps": 1 if smoke else 3}) for i in stdio]
    cases += [("rss", i, {"n": 2 if smoke else 50}) for i in stdio if i in ("threaded", "sdk", *ours)]
    for mode in ("json", "sse", "legacy"):
        cases += [(f"http-{mode}", i, {"mode": mode, "duration": duration}) for i in http]
    # 8 threads: one shared mcpsync client vs a requests.Session per thread.
    cases += [("http-threads", i, {"mode": "json", "duration": duration, "threads": 8}) for i in ("requests", *ours)]
    return cases


def rotated(cases: list[tuple[str, str, dict]], r: int) -> list[tuple[str, str, dict]]:
    """*cases* with each case's columns in round *r*'s order: rotated by *r*.

    Run in one fixed order, a column always follows the same neighbour, and on a
    2-CPU machine that alone moved a column by several per cent: an A/A run (this
    checkout against an identical copy as ``--baseline``) gave the copy 0.95 of
    the sequential row over 9 rounds, single rounds 0.83 to 1.21.  Rotating gives
    every column every place in turn.
    """
    groups: dict[str, list[tuple[str, str, dict]]] = {}
    for item in cases:
        groups.setdefault(item[0], []).append(item)
    out: list[tuple[str, str, dict]] = []
    for group in groups.values():
        k = r % len(group)
        out += group[k:] + group[:k]
    return out


def measure(rounds: int, smoke: bool, sdk: bool, only: set[str] | None = None) -> dict[str, dict[str, list[dict]]]:
    results: dict[str, dict[str, list[dict]]] = {}
    server = HttpServer()
    try:
        for r in range(rounds):
            for case, impl, args in rotated(plan(smoke, sdk), r):
                if only and case not in only:
                    continue
                workload = case if case in ("http-threads",) or not case.startswith("http") else "http"
                if case.startswith("http"):
                    args = dict(args, port=server.port)
                out, wall = run_client(impl, workload, args)
                if case == "cold":
                    out = {"ms": wall * 1e3}
                results.setdefault(case, {}).setdefault(impl, []).append(out or {})
            print(f"round {r + 1}/{rounds} done", flush=True)
    finally:
        server.close()
    return results


def value(run: dict, key: str) -> float | None:
    """``run[key]``, where a dotted key reaches into nested results (``"1048576.ms"``)."""
    found: object = run
    for part in key.split("."):
        found = found.get(part) if isinstance(found, dict) else None
    return found if isinstance(found, (int, float)) else None


def med(results: dict, case: str, impl: str, key: str) -> float | None:
    runs = results.get(case, {}).get(impl)
    if not runs:
        return None
    values = [v for v in (value(run, key) for run in runs) if v is not None]
    return statistics.median(values) if values else None


def fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def table(results: dict, sdk: bool) -> tuple[str, list[tuple[str, float | None, str, bool | None]]]:
    stdio, http = columns(STDIO, sdk), columns(HTTP, sdk)
    sizes = sorted({int(s) for runs in results.get("echo", {}).values() for run in runs for s in run})
    rows = [
        ("sequential tools/call, calls/s", "seq", "rate", 0),
        ("sequential p50, µs", "seq", "p50_us", 0),
        ("sequential p99, µs", "seq", "p99_us", 0),
        ("8 threads, one client, calls/s", "threads", "rate", 0),
        ("8 threads, p99, µs", "threads", "p99_us", 0),
        ("8 threads, timeout=0.25 each, calls/s", "deadline", "rate", 0),
    ]
    rows += [(f"echo {s / MIB:g} MiB, ms", "echo", f"{s}.ms", 1) for s in sizes]
    rows += [
        ("RSS holding N clients, MB", "rss", "mb", 1),
        ("threads per idle connection", "rss", "threads", 2),
        ("process-wide threads (shared by all connections)", "rss", "shared", 0),
        ("cold start (whole process), ms", "cold", "ms", 0),
        ("N servers one by one: slowest connect + tools/list, ms", "group", "slowest_ms", 0),
        ("N servers one by one: all of them, ms", "group", "sum_ms", 0),
        ("N servers as a ClientGroup: connect + tools/list, ms", "group", "group_ms", 0),
    ]
    out = ["### stdio (raw server)", "", "| workload | " + " | ".join(IMPLS[i][0] for i in stdio) + " |"]
    out.append("|---" * (len(stdio) + 1) + "|")
    for label, case, key, digits in rows:
        out.append(f"| {label} | " + " | ".join(fmt(med(results, case, i, key), digits) for i in stdio) + " |")
    out += ["", "### HTTP (raw server on 127.0.0.1)", "", "| workload | " + " | ".join(IMPLS[i][0] for i in http) + " |"]
    out.append("|---" * (len(http) + 1) + "|")
    for mode, what in (("json", "JSON reply"), ("sse", "SSE reply"), ("legacy", "legacy HTTP+SSE")):
        for key, unit in (("rate", "calls/s"), ("p50_us", "p50 µs")):
            out.append(
                f"| {what}, {unit} | " + " | ".join(fmt(med(results, f"http-{mode}", i, key)) for i in http) + " |"
            )
    for key, unit in (("rate", "calls/s"), ("p99_us", "p99 µs")):
        out.append(
            f"| 8 threads, JSON reply, {unit} (floor: a Session per thread) | "
            + " | ".join(fmt(med(results, "http-threads", i, key)) for i in http)
            + " |"
        )

    def m(case: str, impl: str, key: str) -> float | None:
        return med(results, case, impl, key)

    big = max(sizes) if sizes else 0
    mid = 10 * MIB if 10 * MIB in sizes else big
    floor_echo = min(v for v in (m("echo", "inline", f"{mid}.ms"), m("echo", "threaded", f"{mid}.ms"), float("inf")) if v)
    targets: list[tuple[str, float | None, str, bool | None]] = []

    def target(name: str, value: float | None, op: str, limit: float | None) -> None:
        if limit is None:  # shown for the record, no goal
            targets.append((name, value, "–", None))
            return
        ok = None if value is None else (value >= limit if op == ">=" else value <= limit)
        targets.append((name, value, f"{op} {limit:g}", ok))

    for impl in ("mcpsync", *BASELINES):
        at = "" if impl == "mcpsync" else f" ({IMPLS[impl][0]})"
        target(f"stdio sequential / threaded floor{at}", ratio(m("seq", impl, "rate"), m("seq", "threaded", "rate")), ">=", 0.9)
        target(f"8 threads / threaded floor{at}", ratio(m("threads", impl, "rate"), m("threads", "threaded", "rate")), ">=", 0.8)
        target(f"8 threads p99 / threaded floor p99{at}", ratio(m("threads", impl, "p99_us"), m("threads", "threaded", "p99_us")), "<=", 1.5)
        if impl != "mcpsync":
            for mode in ("json", "sse", "legacy"):
                target(f"HTTP {mode} calls/s: mcpsync / {IMPLS[impl][0]}",
                       ratio(m(f"http-{mode}", "mcpsync", "rate"), m(f"http-{mode}", impl, "rate")), ">=", 1.0)
    target("8 threads, timeout=0.25 / threaded floor (same)", ratio(m("deadline", "mcpsync", "rate"), m("deadline", "threaded", "rate")), ">=", 0.8)
    target("threads per idle stdio connection", m("rss", "mcpsync", "threads"), "<=", 1.0)
    target("ClientGroup of N / slowest single", ratio(m("group", "mcpsync", "group_ms"), m("group", "mcpsync", "slowest_ms")), "<=", None)
    target("ClientGroup of N / the same one by one", ratio(m("group", "mcpsync", "group_ms"), m("group", "mcpsync", "sum_ms")), "<=", 1)
    target("HTTP 8 threads, one client / a Session per thread", ratio(m("http-threads", "mcpsync", "rate"), m("http-threads", "requests", "rate")), ">=", 0.8)
    target(f"echo {mid / MIB:g} MiB / best floor", ratio(m("echo", "mcpsync", f"{mid}.ms"), floor_echo), "<=", 1.2)
    if big > mid:
        target(f"echo {big / MIB:g} MiB / {mid / MIB:g} MiB (linear: 2)", ratio(m("echo", "mcpsync", f"{big}.ms"), m("echo", "mcpsync", f"{mid}.ms")), "<=", 1.1 * big / mid)
    target("RSS / threaded floor", ratio(m("rss", "mcpsync", "mb"), m("rss", "threaded", "mb")), "<=", 1.3)
    target("cold start / inline floor", ratio(m("cold", "mcpsync", "ms"), m("cold", "inline", "ms")), "<=", 1.2)
    target("HTTP JSON calls/s / requests floor", ratio(m("http-json", "mcpsync", "rate"), m("http-json", "requests", "rate")), ">=", 1.0)
    target("SSE-reply p50 / requests floor p50", ratio(m("http-sse", "mcpsync", "p50_us"), m("http-sse", "requests", "p50_us")), "<=", 1.2)
    if sdk:
        for name, case, key, higher in (
            ("stdio sequential", "seq", "rate", True),
            ("8 threads", "threads", "rate", True),
            (f"echo {mid / MIB:g} MiB", "echo", f"{mid}.ms", False),
            ("RSS", "rss", "mb", False),
            ("cold start", "cold", "ms", False),
            ("HTTP JSON", "http-json", "rate", True),
            ("HTTP SSE reply", "http-sse", "rate", True),
            ("legacy HTTP+SSE", "http-legacy", "rate", True),
        ):
            r = ratio(m(case, "mcpsync", key), m(case, "sdk", key))
            target(f"{name}: mcpsync / SDK (asyncio)", r, ">=" if higher else "<=", 1.0)
    out += paired(results)
    out += ["", "### Targets (ratios within this run)", "", "| target | mcpsync | goal | met |", "|---|---|---|---|"]
    for name, value, goal, ok in targets:
        out.append(f"| {name} | {fmt(value, 2)} | {goal} | {'–' if ok is None else ('yes' if ok else '**no**')} |")
    return "\n".join(out) + "\n", targets


#: Rows compared round by round against each ``--baseline``: (label, case, key).
PAIRED = [
    ("stdio sequential calls/s", "seq", "rate"),
    ("stdio 8 threads calls/s", "threads", "rate"),
    ("stdio 8 threads, timeout=0.25, calls/s", "deadline", "rate"),
    ("HTTP JSON reply calls/s", "http-json", "rate"),
    ("HTTP SSE reply calls/s", "http-sse", "rate"),
    ("legacy HTTP+SSE calls/s", "http-legacy", "rate"),
    ("HTTP 8 threads calls/s", "http-threads", "rate"),
    ("echo 1 MiB ms (lower is better)", "echo", f"{MIB}.ms"),
    ("echo 10 MiB ms (lower is better)", "echo", f"{10 * MIB}.ms"),
    ("echo 20 MiB ms (lower is better)", "echo", f"{20 * MIB}.ms"),
    ("cold start ms (lower is better)", "cold", "ms"),
    ("RSS holding N clients MB (lower is better)", "rss", "mb"),
]


def paired(results: dict) -> list[str]:
    """mcpsync ÷ each baseline, round by round: the median ratio, the range, and the rounds ahead.

    The two columns of one round ran minutes apart at most, on the same machine
    state; the spread of their ratio over rounds shows how large a difference
    this run can tell from noise.
    """
    out: list[str] = []
    for base in BASELINES:
        lines = []
        for label, case, key in PAIRED:
            ours, theirs = results.get(case, {}).get("mcpsync"), results.get(case, {}).get(base)
            if not ours or not theirs:
                continue
            pairs = [(value(a, key), value(b, key)) for a, b in zip(ours, theirs)]
            ratios = sorted(x / y for x, y in pairs if x and y)
            if not ratios:
                continue
            lower = "lower is better" in label
            ahead = sum(1 for r in ratios if (r < 1 if lower else r > 1))
            lines.append(f"| {label} | {statistics.median(ratios):.3f} | {ratios[0]:.2f} – {ratios[-1]:.2f}"
                         f" | {ahead} of {len(ratios)} |")
        if lines:
            out += ["", f"### mcpsync ÷ {IMPLS[base][0]}, round by round", "",
                    "| row | median ratio | lowest – highest | rounds mcpsync was ahead |", "|---|---|---|---|", *lines]
    return out


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{cpu}, {os.cpu_count()} CPUs visible, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}; load average {load:.2f} at the end of the run"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny durations and sizes: checks it all runs")
    parser.add_argument("--no-sdk", action="store_true", help="skip the official SDK (no virtualenv needed)")
    parser.add_argument("--out", default=None, help="write the Markdown table here too")
    parser.add_argument("--json", default=None, help="write the raw per-round results here")
    parser.add_argument("--baseline", action="append", default=[], metavar="[NAME=]DIR",
                        help="another mcpsync checkout, measured as one more column (before/after); repeatable")
    parser.add_argument("--only", default="", help="comma-separated cases: cold,seq,threads,deadline,echo,rss,group,"
                        "http-json,http-sse,http-legacy,http-threads")
    opts = parser.parse_args()
    sdk = not opts.no_sdk
    for index, spec in enumerate(opts.baseline):
        name, _, path = spec.partition("=") if "=" in spec else ("", "", spec)  # a path may hold "="
        key = name or ("baseline" if index == 0 else f"baseline{index + 1}")
        BASELINES[key] = os.path.abspath(path)
        IMPLS[key] = (f"mcpsync @ {name or 'baseline'}", "mcpsync_bench.py", "x")
    if sdk:
        ensure_sdk()
    compile_bytecode()
    rounds = 1 if opts.smoke and opts.rounds == 3 else opts.rounds
    started = time.time()
    results = measure(rounds, opts.smoke, sdk, set(filter(None, opts.only.split(","))))
    text, _ = table(results, sdk)
    text = (
        f"Machine: {machine()}. {rounds} interleaved round(s), medians; "
        f"{time.time() - started:.0f} s in all.\n\n" + text
    )
    print(text)
    if opts.out:
        with open(opts.out, "w") as f:
            f.write(text)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
