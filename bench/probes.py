"""The probe recorder's cost on product code (docs/design/isolated-oracle.md, "Probes").

The product process runs every call of product code under the recorder's profile function
and audit hook (sandbox/_inside/_probes.py). This bench times product-shaped work in fresh
interpreters, interleaved, with no recorder, with this tree's, and with ``--baseline
FILE`` (another checkout's ``sandbox/_inside/_probes.py``, e.g. of the commit before a
change), and prints each workload's medians and its ratio to the run with no recorder:

- ``calls``: 300,000 calls of a small Python function (the worst case: all calls);
- ``mixed``: string formatting, dict and list work, ``Decimal`` arithmetic and ``json``
  round trips, as a library's own code does;
- ``builtins``: C functions called from Python (``len``, ``isinstance``, ``sorted``).

    python bench/probes.py [--rounds N] [--baseline FILE]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "sandbox" / "_inside" / "_probes.py"
WORK = r"""
import importlib.util, os, sys, time, json
from decimal import Decimal
recorder, workload, tree = sys.argv[1], sys.argv[2], sys.argv[3]
if recorder != "-":
    spec = importlib.util.spec_from_file_location("recorder", recorder)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    library = tuple(p for p in sys.path if p and not p.startswith(tree))
    module.arm_probes(os.open(os.devnull, os.O_WRONLY), tree, library)

def small(a, b):
    return a + b

def calls():
    total = 0
    for i in range(300_000):
        total = small(total, i)
    return total

def mixed():
    out = []
    for i in range(20_000):
        row = {"id": i, "name": f"item-{i:05d}", "price": str(Decimal(i) / 7)}
        out.append(json.loads(json.dumps(row))["name"].upper())
    return len(out)

def builtins_():
    items, n = list(range(50)), 0
    for i in range(60_000):
        n += len(items) + isinstance(i, int) + sorted(items[:3])[0]
    return n

work = {"calls": calls, "mixed": mixed, "builtins": builtins_}[workload]
start = time.perf_counter()
work()
print(time.perf_counter() - start)
"""
WORKLOADS = ("calls", "mixed", "builtins")


def once(recorder: str, workload: str, tree: str) -> float:
    proc = subprocess.run(
        [sys.executable, "-c", WORK, recorder, workload, tree],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(proc.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout's _probes.py")
    args = parser.parse_args()
    recorders = {"none": "-", "this tree": str(HERE)}
    if args.baseline:
        recorders["baseline"] = str(args.baseline)
    with tempfile.TemporaryDirectory() as tree:
        times = {(r, w): [] for r in recorders for w in WORKLOADS}
        for _ in range(args.rounds):
            for workload in WORKLOADS:
                for name, recorder in recorders.items():
                    times[name, workload].append(once(recorder, workload, tree))
    for workload in WORKLOADS:
        plain = statistics.median(times["none", workload])
        print(f"{workload:9} none {plain:.3f} s", end="")
        for name in list(recorders)[1:]:
            median = statistics.median(times[name, workload])
            print(f"  {name} {median:.3f} s ({median / plain:.2f}x)", end="")
        print()


if __name__ == "__main__":
    main()
