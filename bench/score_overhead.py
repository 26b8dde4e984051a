"""``patchwarden score`` against the same pytest commands run by hand, in sequence.

The by-hand procedure is what a careful reviewer would do without us: check
out parent and patch, then run pytest once per tree and seed, one after the
other, with the project's ordinary set-up (plugin autoload on). ``score``
does more (scratch clone, worktrees, restore, hashing, sandbox, evidence
bundle) and must still be faster. Both are measured in this run, alternating,
on the orders example (base -> patch-fix). Prints both times and the ratio.

With ``--baseline PATH`` (another install's ``patchwarden``, e.g. of the commit before a
change) that one's ``score`` is timed too, interleaved with ours, so a change's own cost is
read off the same noisy machine (docs/design/runner.md measures the runner's layers so).

    python bench/score_overhead.py [--rounds N] [--baseline PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEEDS = (11, 29, 47)
CONTRACT = "contract/differential-contract.yaml"
NODES = (
    "tests/properties/test_orders.py::test_total_non_negative",
    "tests/properties/test_orders.py::test_total_matches_fixture",
    "tests/properties/test_orders.py::test_bulk_rounding_sampled",
)
SEED_PLUGIN = """
import os, pytest

@pytest.fixture
def contract_seed():
    return int(os.environ["PYTHONHASHSEED"])
"""


def make_example(dest: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "make_repo", ROOT / "examples/orders/make_repo.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_repo(dest)


def by_hand(repo: Path, work: Path, plugin_dir: Path) -> float:
    start = time.perf_counter()
    for name, ref in (("parent", "base"), ("patch", "patch-fix")):
        tree = work / name
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(tree), ref],
            check=True,
        )
        for seed in SEEDS:
            env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(plugin_dir)}
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "seedplugin",
                    "-p",
                    "no:cacheprovider",
                    f"--hypothesis-seed={seed}",
                    *NODES,
                ],
                cwd=tree,
                env=env,
                capture_output=True,
                check=False,
            )
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)], check=True
        )
    return time.perf_counter() - start


def with_score(repo: Path, logs: Path, state: Path, executable: str = "patchwarden") -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [
            executable,
            "score",
            "--repo",
            str(repo),
            "--contract",
            CONTRACT,
            "--parent",
            "base",
            "--patch",
            "patch-fix",
            "--log-dir",
            str(logs),
        ],
        env={**os.environ, "XDG_STATE_HOME": str(state)},
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"score failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="another patchwarden executable, timed interleaved")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = base / "orders"
        make_example(repo)
        plugin_dir = base / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / "seedplugin.py").write_text(SEED_PLUGIN)
        with_score(repo, base / "logs", base / "state")  # warm the scratch clone and caches
        if args.baseline:
            with_score(repo, base / "logs-baseline", base / "state-baseline", args.baseline)
        hand, ours, theirs = [], [], []
        for round_no in range(args.rounds):
            hand.append(by_hand(repo, base / f"hand{round_no}", plugin_dir))
            ours.append(with_score(repo, base / "logs", base / "state"))
            if args.baseline:
                theirs.append(
                    with_score(repo, base / "logs-baseline", base / "state-baseline", args.baseline)
                )
    h, s = statistics.median(hand), statistics.median(ours)
    print(f"cores: {os.cpu_count()}  rounds: {args.rounds}  (2 trees x {len(SEEDS)} seeds)")
    print(f"by hand, sequential pytest: median {h:6.2f} s  runs {[round(x, 2) for x in hand]}")
    print(f"patchwarden score:          median {s:6.2f} s  runs {[round(x, 2) for x in ours]}")
    print(f"ratio score / by hand: {s / h:.2f}")
    if theirs:
        b = statistics.median(theirs)
        shown = [round(x, 2) for x in theirs]
        print(f"baseline score:             median {b:6.2f} s  runs {shown}")
        print(f"ratio score / baseline score: {s / b:.3f}")


if __name__ == "__main__":
    main()
