"""``patchwarden score`` on the ctest example against the same CMake and ctest commands by hand.

The by-hand procedure is what a reviewer would script without us, with no sandbox: check
out parent and patch, and for each tree and each seed run ``cmake -S tree -B build``,
``cmake --build build`` and ``ctest --test-dir build --output-junit ...`` on the contract's
tests with the seed in the contract's ``seed_env``. One build directory per tree, so the
first seed builds and CMake finds the later ones up to date: the build is cached per tree
on both sides (``score`` caches it by tree content, docs/design/runners.md). ``score`` does
more (scratch clone, worktrees, restore, hashing, a sandboxed build, a copy of the build per
seed, the evidence bundle). The seeds are the contract's plus as many as ``score`` draws as
extra secret seeds by default (``scorer.extra_seeds``), so both sides do the same runs.

Both are timed in this one process, interleaved round by round, on examples/paths
(base -> patch-fix, built by its make_repo.py). Prints the medians, the ratio score / by
hand (goal: at most 1.2) and the load average; no time is asserted.

    python bench/ctest.py [--rounds N]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from score_overhead import CONTRACT, ROOT, with_score

from patchwarden.sandbox._ctest_runner import BUILD_PARALLEL
from patchwarden.scorer import Contract, ScorerConfig, load_contract

GOAL = 1.2
TREES = (("parent", "base"), ("patch", "patch-fix"))


def make_paths(dest: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "make_paths_repo", ROOT / "examples/paths/make_repo.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_repo(dest)


def seeds_of(contract: Contract) -> list[int]:
    """The contract's seeds, then one more per extra seed ``score`` draws by default (their
    values are secret; any seed costs the same here)."""
    extra = ScorerConfig().extra_seeds
    return [*contract.seeds, *range(max(contract.seeds) + 1, max(contract.seeds) + 1 + extra)]


def by_hand(repo: Path, work: Path, contract: Contract) -> float:
    names = "|".join(p.test for p in contract.properties)
    start = time.perf_counter()
    for name, ref in TREES:
        tree, build = work / name, work / f"{name}-build"
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(tree), ref],
            check=True,
        )
        for seed in seeds_of(contract):
            env = {**os.environ, contract.seed_env: str(seed)}
            steps = [
                ["cmake", "-S", str(tree), "-B", str(build), "-DCMAKE_BUILD_TYPE=Debug"],
                ["cmake", "--build", str(build), "--parallel", str(BUILD_PARALLEL)],
                [
                    "ctest",
                    "--test-dir",
                    str(build),
                    "--output-junit",
                    f"junit-{seed}.xml",
                    "--no-tests=error",
                    "-R",
                    f"^({names})$",
                ],
            ]
            for step in steps[:2]:
                subprocess.run(step, env=env, capture_output=True, check=True)
            # A failing test (the parent's bug, on some seeds) is an outcome, not an error;
            # a run that wrote no report is one, so the baseline never times nothing.
            subprocess.run(steps[2], env=env, capture_output=True, check=False)
            if not (build / f"junit-{seed}.xml").is_file():
                sys.exit(f"by hand: ctest wrote no JUnit report for {name}, seed {seed}")
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)], check=True
        )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    loads = [os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="pw-bench-ctest-") as tmp:
        base = Path(tmp)
        repo = base / "paths"
        make_paths(repo)
        contract = load_contract(ROOT / "examples/paths/template" / CONTRACT)
        with_score(repo, base / "logs", base / "state")  # warm the scratch clone and caches
        hand: list[float] = []
        ours: list[float] = []
        for number in range(args.rounds):
            # Alternate which goes first, so neither always meets the other's leftovers.
            hand_first = number % 2 == 0
            if hand_first:
                hand.append(by_hand(repo, base / f"hand{number}", contract))
            ours.append(with_score(repo, base / "logs", base / "state"))
            if not hand_first:
                hand.append(by_hand(repo, base / f"hand{number}", contract))
            loads.append(os.getloadavg())
            print(
                f"round {number + 1}: by hand {hand[-1]:.2f} s, score {ours[-1]:.2f} s, "
                f"load {loads[-1][0]:.2f}",
                flush=True,
            )
    h, s = statistics.median(hand), statistics.median(ours)
    seeds = seeds_of(contract)
    print(f"cores: {os.cpu_count()}  rounds: {args.rounds}  (2 trees x {len(seeds)} seeds {seeds})")
    print(f"by hand, cmake + ctest:  median {h:6.2f} s  runs {[round(x, 2) for x in hand]}")
    print(f"patchwarden score:       median {s:6.2f} s  runs {[round(x, 2) for x in ours]}")
    print(f"ratio score / by hand: {s / h:.2f} (goal <= {GOAL})")
    one_minute = [round(load[0], 2) for load in loads]
    print(f"load average (1 min) at start and after each round: {one_minute}")


if __name__ == "__main__":
    main()
