"""Batch scoring: ``score-batch`` against one ``score`` per request, Ray against local,
verdicts per minute, and the floor ratio of one ``score``. All in one run, on the orders
example, so the ratios compare like with like on however busy the machine is.

    python bench/batch.py [--requests 24] [--floor-rounds 3] [--no-ray] [--floor-only]

- sequential: one ``patchwarden score`` process per request, one after the other;
- batch local: ``patchwarden score-batch`` (default executor, --jobs = cores);
- batch ray: ``patchwarden score-batch --executor ray`` (a local Ray started and stopped
  by the command, so its start-up is counted);
- floor of one score: its wall time / (the sum of its sandboxed run times / jobs), where
  the run times are the ``duration_s`` of each run in its bundle. 1.0 would mean the cores
  did nothing but sandboxed runs from the moment the command started to its exit. Measured
  for ``score`` (a process per call), ``score --warm`` (after one call that starts the warm
  scorer) and ``score()`` in a process that has scored before.

Requests cycle over the example's four (parent, patch) pairs, each patch made a commit of its
own (one line in README.md), so only parents' runs are shared; the batch is also run on the
four pairs repeated as they are, where every unit after the first of a pair is shared. Each
way gets a fresh log directory; they share the scorer's state (its clone), as runs on one
machine do.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from score_overhead import CONTRACT, ROOT, make_example

PAIRS = [
    (c["parent"], c["patch"])
    for c in json.loads((ROOT / "examples/orders/expected.json").read_text())
]


def _requests(repo: Path, count: int) -> list[dict[str, str]]:
    pairs = itertools.islice(itertools.cycle(PAIRS), count)
    return [
        {"id": f"r{n:03d}", "repo": str(repo), "parent": parent, "patch": patch}
        for n, (parent, patch) in enumerate(pairs)
    ]


GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "user.name=bench", "-c", "user.email=b@b"]


def distinct(repo: Path, requests: list[dict[str, str]]) -> list[dict[str, str]]:
    """The same requests, each patch made its own commit: the pair's patch plus one line of
    its own in README.md (no check reads it, so each decision stays the pair's). Only the
    parents' runs can then be shared, as in a benchmark of many agents' patches."""
    work = repo.parent / "bench-worktree"
    subprocess.run(
        [*GIT, "-C", str(repo), "worktree", "add", "-q", "--detach", str(work)], check=True
    )
    out = []
    for request in requests:
        subprocess.run(
            [*GIT, "-C", str(work), "checkout", "-q", "--detach", request["patch"]], check=True
        )
        with (work / "README.md").open("a") as readme:
            readme.write(f"\nScored in request {request['id']}.\n")
        subprocess.run([*GIT, "-C", str(work), "commit", "-q", "-am", request["id"]], check=True)
        sha = subprocess.run(
            [*GIT, "-C", str(work), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
        ).stdout.strip()
        out.append({**request, "patch": sha})
    subprocess.run([*GIT, "-C", str(repo), "worktree", "remove", "--force", str(work)], check=True)
    return out


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["patchwarden", *args], capture_output=True, text=True, env=env)


def sequential(
    requests: list[dict[str, str]], logs: Path, env: dict[str, str]
) -> tuple[float, dict[str, str]]:
    decisions = {}
    started = time.perf_counter()
    for request in requests:
        proc = _run(
            ["score", "--repo", request["repo"], "--contract", CONTRACT, "--parent",
             request["parent"], "--patch", request["patch"], "--log-dir", str(logs), "--json"],
            env,
        )  # fmt: skip
        if proc.returncode not in (0, 1, 3):
            sys.exit(f"score failed ({proc.returncode}): {proc.stderr.strip()}")
        decisions[request["id"]] = json.loads(proc.stdout)["decision"]
    return time.perf_counter() - started, decisions


def batch(
    requests_file: Path, logs: Path, env: dict[str, str], *extra: str
) -> tuple[float, dict[str, str]]:
    started = time.perf_counter()
    proc = _run(["score-batch", str(requests_file), "--log-dir", str(logs), "--json", *extra], env)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"score-batch {' '.join(extra)} failed ({proc.returncode}): {proc.stderr.strip()}")
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    errors = [line for line in lines if "error" in line]
    if errors:
        sys.exit(f"score-batch {' '.join(extra)}: {errors[0]}")
    return elapsed, {line["id"]: line["decision"] for line in lines}


def floor_ratio(
    repo: Path, logs: Path, env: dict[str, str], *extra: str
) -> tuple[float, float, float]:
    """(ratio, wall, sum of run times) of one ``score`` of the example's fix (``--warm``:
    through the warm scorer)."""
    started = time.perf_counter()
    proc = _run(
        ["score", "--repo", str(repo), "--contract", CONTRACT, "--parent", "base",
         "--patch", "patch-fix", "--log-dir", str(logs), "--json", *extra],
        env,
    )  # fmt: skip
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"score failed ({proc.returncode}): {proc.stderr.strip()}")
    bundle = logs / "verdicts" / json.loads(proc.stdout)["verdict_id"]
    runs = [json.loads(p.read_text())["duration_s"] for p in (bundle / "runs").glob("*.json")]
    jobs = os.cpu_count() or 1
    return wall / (sum(runs) / jobs), wall, sum(runs)


def stop_warm_scorers(state: Path) -> None:
    """SIGTERM the warm scorers started under ``state`` (their logs name them)."""
    for log in (state / "patchwarden" / "scorer" / "warm").glob("*.log"):
        for pid in re.findall(r"warm scorer (\d+): listening", log.read_text()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGTERM)


def floor_in_process(repo: Path, base: Path) -> tuple[float, float, float]:
    """The same ratio for ``score()`` called in a process that has scored before: what the
    scorer child of ``serve`` pays per submission (no interpreter start, no imports, the
    sandbox check done)."""
    from patchwarden.sandbox import SandboxConfig
    from patchwarden.scorer import ScorerConfig, ScoreRequest, score

    config = ScorerConfig(state_dir=str(base / "state-in-process"), log_dir=str(base / "inproc"))
    request = ScoreRequest(repo=repo, contract=CONTRACT, parent="base", patch="patch-fix")
    started = time.perf_counter()
    verdict = score(request, config, SandboxConfig())
    wall = time.perf_counter() - started
    runs = [
        json.loads(p.read_text())["duration_s"] for p in (verdict.bundle / "runs").glob("*.json")
    ]
    return wall / (sum(runs) / config.worker_count()), wall, sum(runs)


def throughput(
    args: argparse.Namespace,
    repo: Path,
    base: Path,
    env: dict[str, str],
    requests_file: Path,
    repeated_file: Path,
) -> tuple[float, float, float, float | None]:
    """Seconds of: sequential score calls, the batch, the batch on repeated pairs, Ray."""
    requests = [json.loads(line) for line in requests_file.read_text().splitlines()]
    seq_s, seq = sequential(requests, base / "seq", env)
    local_s, local = batch(requests_file, base / "local", env)
    if local != seq:
        sys.exit("score-batch and score disagree on some decision")
    repeated_s, again = batch(repeated_file, base / "repeated", env)
    if again != seq:
        sys.exit("score-batch on the repeated pairs disagrees with score")
    ray_s = None
    if not args.no_ray:
        ray_s, on_ray = batch(requests_file, base / "ray", env, "--executor", "ray")
        if on_ray != seq:
            sys.exit("the ray executor and score disagree on some decision")
    return seq_s, local_s, repeated_s, ray_s


def print_throughput(
    n: int, seq_s: float, local_s: float, repeated_s: float, ray_s: float | None
) -> None:
    print(f"cores: {os.cpu_count()}  requests: {n} distinct patches (2 trees x 3 seeds each)")
    print(f"sequential score:  {seq_s:7.1f} s  {60 * n / seq_s:6.1f} verdicts/min")
    print(f"score-batch local: {local_s:7.1f} s  {60 * n / local_s:6.1f} verdicts/min")
    if ray_s is not None:
        print(f"score-batch ray:   {ray_s:7.1f} s  {60 * n / ray_s:6.1f} verdicts/min")
    print(f"score-batch local, the four pairs repeated: {repeated_s:7.1f} s")
    print(f"ratio batch local / sequential score: {local_s / seq_s:.2f}  (target <= 0.6)")
    print(f"  the same with the pairs repeated:   {repeated_s / seq_s:.2f}  (every unit shared)")
    if ray_s is not None:
        print(f"ratio batch ray / batch local:        {ray_s / local_s:.2f}  (target <= 1.3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--floor-rounds", type=int, default=3)
    parser.add_argument("--no-ray", action="store_true", help="leave the Ray executor out")
    parser.add_argument("--floor-only", action="store_true", help="only the floor ratios")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="patchwarden-bench-batch-") as tmp:
        base = Path(tmp)
        repo = base / "orders"
        make_example(repo)
        env = {**os.environ, "XDG_STATE_HOME": str(base / "state")}
        repeated = _requests(repo, args.requests)
        requests = distinct(repo, repeated)
        requests_file = base / "requests.jsonl"
        requests_file.write_text("".join(json.dumps(r) + "\n" for r in requests))
        repeated_file = base / "repeated.jsonl"
        repeated_file.write_text("".join(json.dumps(r) + "\n" for r in repeated))
        floor_ratio(repo, base / "warm", env)  # the scratch clone and the sandbox check, once

        floors = [floor_ratio(repo, base / "floor", env) for _ in range(args.floor_rounds)]
        floor_ratio(repo, base / "warm", env, "--warm")  # starts the warm scorer
        warm_cli = [
            floor_ratio(repo, base / "floor-warm", env, "--warm") for _ in range(args.floor_rounds)
        ]
        stop_warm_scorers(base / "state")
        floor_in_process(repo, base)  # warm: imports, the clone, the sandbox check
        warm = [floor_in_process(repo, base) for _ in range(args.floor_rounds)]
        if not args.floor_only:
            totals = throughput(args, repo, base, env, requests_file, repeated_file)

    if not args.floor_only:
        print_throughput(args.requests, *totals)
    ratio = statistics.median(f[0] for f in floors)
    detail = ", ".join(f"{r:.2f} ({w:.1f} s / {s:.1f} s of runs)" for r, w, s in floors)
    print(f"floor ratio of one score (median):    {ratio:.2f}  (target <= 1.15): {detail}")
    ratio = statistics.median(f[0] for f in warm_cli)
    detail = ", ".join(f"{r:.2f} ({w:.1f} s / {s:.1f} s of runs)" for r, w, s in warm_cli)
    print(f"  the same, score --warm (median):    {ratio:.2f}  (target <= 1.15): {detail}")
    ratio = statistics.median(f[0] for f in warm)
    detail = ", ".join(f"{r:.2f} ({w:.1f} s / {s:.1f} s of runs)" for r, w, s in warm)
    print(f"  the same, score() in a warm process: {ratio:.2f}: {detail}")


if __name__ == "__main__":
    main()
