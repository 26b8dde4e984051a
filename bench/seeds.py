"""What the default extra secret seed costs: ``score`` with one extra seed against none.

Both in this one process, through the scorer's own ``score`` (bubblewrap, the isolated
oracle, ``jobs`` = the cores), on the orders example (base -> patch-fix), in interleaved
rounds so both meet the same machine load. One extra seed is two more sandboxed runs (one
per tree) beside the schedule's six; on two cores they mostly queue behind them. Prints the
median of each and the ratio (goal: at most 1.4; docs/design/differential-gate.md quotes
the figure).

    python bench/seeds.py [--rounds N] [--patch REF]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import tempfile
import time
from pathlib import Path

from patchwarden.sandbox import SandboxConfig
from patchwarden.scorer import ScorerConfig, ScoreRequest, score

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = "contract/differential-contract.yaml"
GOAL = 1.4


def make_example(dest: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "make_repo", ROOT / "examples/orders/make_repo.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_repo(dest)


def timed(request: ScoreRequest, config: ScorerConfig) -> float:
    start = time.perf_counter()
    verdict = score(request, config, SandboxConfig())
    took = time.perf_counter() - start
    assert verdict.decision == "accept", verdict.review_note
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--patch", default="patch-fix")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pw-bench-seeds-") as tmp:
        root = Path(tmp)
        repo = root / "orders"
        make_example(repo)
        request = ScoreRequest(repo=repo, contract=CONTRACT, parent="base", patch=args.patch)
        configs = {
            count: ScorerConfig(
                state_dir=str(root / "state"), log_dir=str(root / "logs"), extra_seeds=count
            )
            for count in (0, 1)
        }
        timed(request, configs[0])  # warm the caches (interpreter, clone) before timing
        times: dict[int, list[float]] = {0: [], 1: []}
        for number in range(args.rounds):
            order = (0, 1) if number % 2 == 0 else (1, 0)
            for count in order:
                times[count].append(timed(request, configs[count]))
            print(
                f"round {number + 1}: 0 extra seeds {times[0][-1]:.2f} s, "
                f"1 extra seed {times[1][-1]:.2f} s",
                flush=True,
            )
    none, one = statistics.median(times[0]), statistics.median(times[1])
    ratio = one / none
    print(f"score, 0 extra seeds: median {none:.2f} s over {args.rounds} rounds")
    print(f"score, 1 extra seed:  median {one:.2f} s")
    print(f"ratio: {ratio:.2f} (goal <= {GOAL})")


if __name__ == "__main__":
    main()
