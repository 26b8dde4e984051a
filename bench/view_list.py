"""How fast is the reviewer's list page with 1,000 verdicts? Budget: 300 ms.

    python bench/view_list.py [-n 1000] [--repeat 15]

Writes N synthetic verdicts (bundles shaped as the scorer writes them, tests/_view_data.py)
and times, through starlette's TestClient (the whole app: guard, routing, templates):

- cold: a fresh app's first ``GET /`` (parses the whole index, reads the page's 50
  decision.json files, renders);
- warm: ``GET /`` again (nothing appended: one stat of the index);
- filtered: ``GET /?decision=reject&page=3``;
- appended: ``GET /`` after one more verdict (only the new bytes are parsed).

The baseline is ``read_index`` (the scorer's own reader of verdicts.jsonl, which
``verdicts list`` uses) on the same index, in the same process. Exits 1 when the cold
page misses the budget.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from starlette.testclient import TestClient

from patchwarden.scorer import read_index
from patchwarden.server._view import create_app
from tests._view_data import write_many, write_verdict

BUDGET_MS = 300.0
BASE = "http://127.0.0.1:8766"


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def get(client: TestClient, path: str) -> None:
    answer = client.get(path)
    if answer.status_code != 200:
        sys.exit(f"GET {path}: {answer.status_code}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="verdicts (default 1000)")
    parser.add_argument("--repeat", type=int, default=15, help="timings of each kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        logs = Path(scratch) / "logs"
        write_many(logs, args.n)
        timings: dict[str, list[float]] = {
            k: [] for k in ("baseline", "cold", "warm", "filtered", "appended")
        }
        for round_ in range(args.repeat):
            timings["baseline"].append(timed(lambda: read_index(logs)))
            client = TestClient(create_app(logs), base_url=BASE)
            timings["cold"].append(timed(lambda c=client: get(c, "/")))
            timings["warm"].append(timed(lambda c=client: get(c, "/")))
            timings["filtered"].append(timed(lambda c=client: get(c, "/?decision=reject&page=3")))
            write_verdict(logs, args.n + round_)
            timings["appended"].append(timed(lambda c=client: get(c, "/")))
    base = statistics.median(timings["baseline"])
    print(f"{args.n} verdicts in the index; medians of {args.repeat} runs")
    for name, values in timings.items():
        median = statistics.median(values)
        ratio = "" if name == "baseline" else f"  {median / base:5.1f}x baseline"
        print(f"{name:>9}: median {median:7.1f} ms  max {max(values):7.1f} ms{ratio}")
    cold = statistics.median(timings["cold"])
    verdict = "within" if cold <= BUDGET_MS else "OVER"
    print(f"   budget: cold list page {cold:.0f} ms, {verdict} {BUDGET_MS:.0f} ms")
    if cold > BUDGET_MS:
        sys.exit(1)


if __name__ == "__main__":
    main()
