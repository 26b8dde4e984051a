"""The isolated oracle's cost and reach (docs/design/isolated-oracle.md).

On the orders example (base -> patch-fix), in this run, interleaved:

- ``patchwarden score`` with ``sandbox.oracle: isolated`` (the default) and with
  ``sandbox.oracle: in-process``: median wall times and their ratio (target <= 1.25);
- the share of the verdict's property records that ran isolated, with each exception's
  reason (from the bundle's ``runs/*.json``);
- one call round trip through the wire: a product program in a plain subprocess (no
  sandbox: the wire alone), ``bulk_price(Decimal, int)`` called N times, in microseconds;
- with ``--baseline PATH`` (another install's ``patchwarden``, e.g. of the commit before a
  change) that one's ``score`` in both modes too, interleaved with ours, so a change's own
  cost on each mode is read off the same noisy machine.

    python bench/isolation.py [--rounds N] [--calls N] [--baseline PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from score_overhead import CONTRACT, make_example

from patchwarden.sandbox._inside import PRODUCT, program


def score(
    repo: Path, logs: Path, state: Path, config: Path, executable: str = "patchwarden"
) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    proc = subprocess.run(
        [executable, "score", "--repo", str(repo), "--contract", CONTRACT, "--parent", "base",
         "--patch", "patch-fix", "--log-dir", str(logs), "--config", str(config), "--json"],
        env={**os.environ, "XDG_STATE_HOME": str(state)},
        capture_output=True,
        text=True,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"score failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return elapsed, json.loads(proc.stdout)


def isolation_share(logs: Path) -> tuple[int, int, dict[str, int]]:
    """(isolated records, all records, reason -> count) over the newest verdict's runs."""
    bundles = sorted((logs / "verdicts").iterdir())
    isolated, total, reasons = 0, 0, {}
    for path in sorted((bundles[-1] / "runs").glob("*.json")):
        for value in json.loads(path.read_text()).get("isolation", {}).values():
            total += 1
            if value == "isolated":
                isolated += 1
            else:
                reasons[value] = reasons.get(value, 0) + 1
    return isolated, total, reasons


def round_trip_us(tree: Path, calls: int) -> tuple[float, float]:
    """Medians over 5 batches of ``calls`` calls of ``orders.bulk_price``, per call: the
    function held by the test (one request a call), and read from the module at each call
    (``orders.bulk_price(...)``: one request too since the read and the call go together,
    two before), interleaved."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    status_r, status_w = os.pipe()
    probe_r, probe_w = os.pipe()  # the probes the product process records (read by no one)
    layout = json.dumps({"roots": ["."], "packages": ["orders"]})
    argv = [sys.executable, "-s", "-P", "-", "--req-fd", str(req_r), "--rep-fd", str(rep_w),
            "--probe-fd", str(probe_w), "--seed", "3", "--layout", layout]  # fmt: skip
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, cwd=tree, pass_fds=(req_r, rep_w, probe_w))
    assert proc.stdin is not None
    proc.stdin.write(program(PRODUCT).encode())
    proc.stdin.close()
    os.close(req_r)
    os.close(rep_w)
    os.close(probe_w)
    oracle: dict[str, Any] = {"__name__": "bench_oracle"}
    exec(compile(program(("_wire", "_proxy")), "<oracle parts>", "exec"), oracle)
    oracle["ISOLATION"]["link"] = oracle["_Link"](req_w, rep_r, status_r, 30.0)
    sys.meta_path.insert(0, oracle["ProductFinder"](["orders"]))
    try:
        import orders  # the proxy module: every call below crosses the wire

        price, held, read = orders.bulk_price, [], []
        for _ in range(5):
            start = time.perf_counter()
            for qty in range(calls):
                price(Decimal("12.34"), qty % 40)
            held.append((time.perf_counter() - start) / calls * 1e6)
            start = time.perf_counter()
            for qty in range(calls):
                orders.bulk_price(Decimal("12.34"), qty % 40)
            read.append((time.perf_counter() - start) / calls * 1e6)
        return statistics.median(held), statistics.median(read)
    finally:
        proc.kill()
        proc.wait()
        os.close(status_w)
        os.close(probe_r)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--baseline", help="another patchwarden executable, timed interleaved")
    args = parser.parse_args()
    runs = {"isolated": "patchwarden", "in-process": "patchwarden"}
    if args.baseline:
        runs.update({"baseline isolated": args.baseline, "baseline in-process": args.baseline})
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = base / "orders"
        make_example(repo)
        configs = {}
        for mode in ("isolated", "in-process"):
            configs[mode] = base / f"{mode}.yaml"
            configs[mode].write_text(f"sandbox:\n  oracle: {mode}\n")
        times: dict[str, list[float]] = {run: [] for run in runs}
        decisions: dict[str, set[str]] = {run: set() for run in runs}

        def once(run: str) -> tuple[float, dict[str, Any]]:
            mode, name = run.removeprefix("baseline "), run.replace(" ", "-")
            logs, state = base / f"logs-{name}", base / f"state-{name}"
            return score(repo, logs, state, configs[mode], runs[run])

        for run in runs:  # warm the scratch clone and caches of each
            once(run)
        for _ in range(args.rounds):
            for run in runs:
                elapsed, verdict = once(run)
                times[run].append(elapsed)
                decisions[run].add(str(verdict.get("decision")))
        isolated, total, reasons = isolation_share(base / "logs-isolated")
        worktree = base / "rt"
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(worktree), "base"],
                       check=True)  # fmt: skip
        trip, read_trip = round_trip_us(worktree, args.calls)
    iso, inproc = statistics.median(times["isolated"]), statistics.median(times["in-process"])
    print(f"score isolated   median {iso:.2f} s  {times['isolated']}  {decisions['isolated']}")
    print(
        f"score in-process median {inproc:.2f} s  {times['in-process']}  {decisions['in-process']}"
    )
    print(f"isolated / in-process: {iso / inproc:.3f} (target <= 1.25)")
    for mode in ("isolated", "in-process") if args.baseline else ():
        theirs = statistics.median(times[f"baseline {mode}"])
        ours = statistics.median(times[mode])
        print(f"baseline {mode:10} median {theirs:.2f} s  {times[f'baseline {mode}']}")
        print(f"{mode} / baseline {mode}: {ours / theirs:.3f}")
    print(f"records isolated: {isolated}/{total}; in-process: {reasons or 'none'}")
    print(f"round trip (bulk_price(Decimal, int), plain subprocess): {trip:.1f} us per call")
    print(
        f"read and called (orders.bulk_price(...)): {read_trip:.1f} us per call, "
        f"{read_trip / trip:.2f} of the held function's"
    )


if __name__ == "__main__":
    main()
