"""What running tests through patchwarden costs, compared with bare pytest.

    python bench/mcp_overhead.py [--rounds N] [--tests NODE ...] [--workdir D]

Builds the orders example, starts ``patchwarden serve`` over stdio with the
SDK client, and times the same selection N rounds, alternating the order of
three ways to run it in the same agent worktree:

- ``bare``: ``python -m pytest`` on the host, no sandbox, no MCP (plugin
  autoload off, as in the sandboxed runs);
- ``sandbox``: ``run_agent_tests`` called directly (bubblewrap and the
  reporter, no MCP);
- ``mcp``: the ``run_tests`` tool through the client (everything).

Prints each round, the medians and the ratios to bare pytest. Times are
wall-clock seconds as the caller sees them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402

from patchwarden.sandbox import SandboxConfig, run_agent_tests  # noqa: E402
from patchwarden.server._demo import build_demo, server_parameters  # noqa: E402

DEFAULT_TESTS = ["tests/test_unit.py"]
PYTEST_FLAGS = ["-p", "no:cacheprovider", "-q"]
WAYS = ("bare", "sandbox", "mcp")


def _worktree(repo: Path) -> Path:
    """The session's worktree: the one git worktree of the example besides its checkout
    (it lives in the trees directory, docs/threat-model.md, not in the state directory)."""
    listing = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    paths = [Path(line[9:]) for line in listing.splitlines() if line.startswith("worktree ")]
    sessions = [p for p in paths if p.resolve() != repo.resolve()]
    if len(sessions) != 1:
        raise SystemExit(f"expected one session worktree of {repo}, found {sessions}")
    return sessions[0]


def _bare(tree: Path, tests: list[str]) -> float:
    # The sandboxed runs load no third-party plugin by entry point; neither does this one,
    # so the three ways run the same pytest.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *PYTEST_FLAGS, *tests],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"bare pytest failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return elapsed


def _sandboxed(tree: Path, tests: list[str]) -> float:
    started = time.perf_counter()
    run = run_agent_tests(tree, [*PYTEST_FLAGS, *tests], 0, SandboxConfig())
    elapsed = time.perf_counter() - started
    if not run.complete:
        raise SystemExit(f"sandboxed run incomplete: {run.problems}\n{run.process.stderr}")
    return elapsed


async def _bench(rounds: int, tests: list[str], workdir: Path) -> dict[str, list[float]]:
    repo, config, env = build_demo(workdir)
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    async with Client(server_parameters(config, env, workdir), read_timeout_seconds=600) as client:
        tree = _worktree(repo)

        async def through_mcp() -> float:
            started = time.perf_counter()
            result = await client.call_tool("run_tests", {"tests": tests})
            elapsed = time.perf_counter() - started
            if result.is_error:
                raise SystemExit(f"run_tests failed: {result.content}")
            return elapsed

        await through_mcp()  # warm-up: first imports, the sandbox check
        for number in range(rounds):
            order = WAYS if number % 2 == 0 else tuple(reversed(WAYS))
            for way in order:
                if way == "mcp":
                    elapsed = await through_mcp()
                elif way == "sandbox":
                    elapsed = await anyio.to_thread.run_sync(_sandboxed, tree, tests)
                else:
                    elapsed = await anyio.to_thread.run_sync(_bare, tree, tests)
                times[way].append(elapsed)
            print(
                f"round {number + 1}: " + "  ".join(f"{way} {times[way][-1]:.3f}s" for way in WAYS),
                flush=True,
            )
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tests", nargs="+", default=DEFAULT_TESTS)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="patchwarden-bench-"))).resolve()
    times = anyio.run(_bench, args.rounds, args.tests, workdir)
    medians = {way: statistics.median(values) for way, values in times.items()}
    print(f"selection: {' '.join(args.tests)}; {args.rounds} rounds, alternating order")
    for way in WAYS:
        print(f"  {way:<8} median {medians[way]:.3f}s  (min {min(times[way]):.3f}s)")
    print(
        f"ratio mcp/bare {medians['mcp'] / medians['bare']:.2f}  "
        f"sandbox/bare {medians['sandbox'] / medians['bare']:.2f}  "
        f"mcp/sandbox {medians['mcp'] / medians['sandbox']:.2f}"
    )


if __name__ == "__main__":
    main()
