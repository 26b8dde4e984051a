"""How much does the sandbox cost per run? `python -c pass`, sandboxed and not, alternating.

    python bench/sandbox_overhead.py [-n 20]

Prints milliseconds (median, mean) of the whole `launch` call as a caller sees it, for each,
and the ratio of the medians. Both sides go through `launch` (same supervision, same limits),
so the difference is bubblewrap (plus, as root, setpriv) and the mounts. As root it also
times sandboxed runs that each lease a uid of `sandbox.uid_range` (docs/reliability.md)
against the shared sandbox uid.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from patchwarden.sandbox import LaunchSpec, SandboxConfig, launch, require_sandbox

BENCH_UIDS = (3_999_300, 3_999_363)
"""A uid range for the bench, at the top of the uid space where no user lives."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="runs of each kind (default 20)")
    runs = parser.parse_args().n
    sandboxed, unsandboxed = SandboxConfig(), SandboxConfig(backend="none")
    configs = {"bubblewrap": sandboxed, "none": unsandboxed}
    if os.geteuid() == 0:
        configs["uid_range"] = SandboxConfig(uid_range=BENCH_UIDS)
    for config in configs.values():
        require_sandbox(config)  # the one-time check is not part of a run's cost
    timings: dict[str, list[float]] = {name: [] for name in configs}
    with tempfile.TemporaryDirectory() as tree:
        Path(tree).chmod(0o755)
        spec = LaunchSpec(argv=["python3", "-c", "pass"], tree=Path(tree))
        for _ in range(runs):
            for name, config in configs.items():
                started = time.perf_counter()
                with contextlib.redirect_stderr(io.StringIO()):  # backend none's warning
                    result = launch(spec, config)
                elapsed = time.perf_counter() - started
                if result.exit_code != 0:
                    sys.exit(f"{name} run failed: {result.stderr}")
                timings[name].append(elapsed * 1000)
    for name, values in timings.items():
        print(
            f"{name:>10}: median {statistics.median(values):6.1f} ms"
            f"  mean {statistics.mean(values):6.1f} ms  (n={len(values)})"
        )
    ratio = statistics.median(timings["bubblewrap"]) / statistics.median(timings["none"])
    print(f"     ratio: {ratio:.2f}x (median sandboxed / median unsandboxed)")
    if "uid_range" in timings:
        leased = statistics.median(timings["uid_range"]) / statistics.median(timings["bubblewrap"])
        print(f"     ratio: {leased:.2f}x (median with a uid per run / median with one uid)")


if __name__ == "__main__":
    main()
