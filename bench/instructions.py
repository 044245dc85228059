"""Instructions and cache misses per call, counted by valgrind: costs that do not move with load.

    python bench/instructions.py                          # this checkout
    python bench/instructions.py --baseline old=/tmp/base # and another one, side by side

Calls/s on a shared 2-CPU machine move by 5-25 % between rounds, more than most
changes to the client's own work.  Here the client process runs under
``valgrind --tool=cachegrind`` (the server does not: it is a child, which valgrind
leaves alone) twice, with a short and a long run of sequential ``tools/call add``;
the difference of the two counts over the difference of calls is what one call
costs the client: instructions (its Python code, the JSON codec, the interpreter,
the user-space side of its system calls; not the kernel's side) and the misses of
the simulated first-level instruction and data caches.  The misses matter as much
as the instructions: client and server take turns on the CPUs, and a call whose
code and data are spread wider finds less of them still cached.  Counts repeat
to within about 1 % (a reply that is already there skips a wait, which depends
on timing).  Needs ``valgrind`` (Debian's package); about 30 s per checkout for
stdio, a few minutes for HTTP (``--http``, ``--legacy``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from run import HttpServer  # noqa: E402 - the bench's own raw HTTP server

#: The workload, run in the measured process: ``N`` sequential calls after ``list_tools``.
PROBE = """
import os, sys
# The checkout measured first: "python -c" puts the working directory (maybe another checkout) ahead of PYTHONPATH.
sys.path[:1] = [{root!r}, os.path.join({here!r}, "clients")]
import _common as c
import mcpsync
assert mcpsync.__file__.startswith({root!r}), mcpsync.__file__
n, url = int(sys.argv[1]), sys.argv[2]
if url == "stdio":
    client = mcpsync.Client.stdio(c.server_argv())
else:
    client = mcpsync.Client.http(url, transport="sse" if url.endswith("/legacy/sse") else "streamable-http")
with client:
    client.list_tools()
    for _ in range(n):
        client.call_tool("add", {{"a": 1, "b": 2}})
"""
SHORT, LONG = 300, 1300


#: valgrind's summary lines, in the order reported.
COUNTS = (("instructions", r"I\s+refs:\s*([\d,]+)"), ("L1i misses", r"I1\s+misses:\s*([\d,]+)"),
          ("L1d misses", r"D1\s+misses:\s*([\d,]+)"))


def count(root: str, url: str, calls: int) -> list[int]:
    """The :data:`COUNTS` of one client process that makes *calls* calls."""
    # A fixed hash seed: with a random one, set and dict layouts (and so the count) vary by ~1 %.
    env = dict(os.environ, PYTHONPATH=root, BENCH_SERVER_PYTHON=sys.executable, PYTHONHASHSEED="0")
    argv = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null", sys.executable,
            "-c", PROBE.format(root=root, here=HERE), str(calls), url]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    found = [re.search(pattern, proc.stderr) for _, pattern in COUNTS]
    if proc.returncode != 0 or not all(found):
        raise RuntimeError(f"valgrind run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return [int(m.group(1).replace(",", "")) for m in found if m is not None]


def per_call(root: str, url: str) -> list[float]:
    """Each of :data:`COUNTS` per call: the long run less the short one, over the calls between."""
    long, short = count(root, url, LONG), count(root, url, SHORT)
    return [(a - b) / (LONG - SHORT) for a, b in zip(long, short)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", action="append", default=[], metavar="[NAME=]DIR")
    parser.add_argument("--http", action="store_true", help="Streamable HTTP (JSON replies) too: minutes")
    parser.add_argument("--legacy", action="store_true", help="legacy HTTP+SSE too: minutes")
    opts = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    trees = {"mcpsync": ROOT}
    for spec in opts.baseline:
        name, _, path = spec.partition("=") if "=" in spec else ("", "", spec)
        trees[f"mcpsync @ {name or 'baseline'}"] = os.path.abspath(path)
    server = HttpServer()
    try:
        rows = [("stdio, sequential tools/call", "stdio")]
        if opts.http:
            rows.append(("Streamable HTTP, JSON reply", f"http://127.0.0.1:{server.port}/json"))
        if opts.legacy:
            rows.append(("legacy HTTP+SSE", f"http://127.0.0.1:{server.port}/legacy/sse"))
        print("| per call, client process | " + " | ".join(trees) + " |")
        print("|---" * (len(trees) + 1) + "|")
        for label, url in rows:
            cells = [per_call(root, url) for root in trees.values()]
            for index, (name, _) in enumerate(COUNTS):
                print(f"| {label}: {name} | " + " | ".join(f"{c[index]:,.0f}" for c in cells) + " |", flush=True)
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
