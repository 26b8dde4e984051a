"""How long ``patchwarden serve`` takes to answer, compared with a minimal MCP server.

    python bench/startup.py [--rounds N] [--workdir D]

Builds the orders example and, N rounds in alternating order, spawns two servers over
stdio with the SDK client the way an MCP client does (``StdioServerParameters``, the
same interpreter):

- ``minimal``: an ``MCPServer`` with one tool and nothing else (the baseline);
- ``serve``: ``patchwarden serve`` on the example;
- ``serve-no-front``: the same with ``PATCHWARDEN_FRONT=0``, without the stdio front that
  answers discovery while the SDK loads (server/_front.py).

Each is timed from the spawn to the answer of ``tools/list``, with the CPU seconds the
server process had used by then (read from /proc: on a shared machine the wall time
swings with the others' load, the CPU time much less); the client is then closed (for
``serve`` before its background set-up need finish). Prints each round, the medians and
the ratios serve / minimal. A client with a start-up timeout of T seconds starts a
server whose time stays under T; the ratio carries over to a slower or busier machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp import Client, StdioServerParameters  # noqa: E402

from patchwarden.server._demo import build_demo, server_parameters  # noqa: E402

MINIMAL = '''\
from mcp.server.mcpserver import MCPServer

app = MCPServer("minimal")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


app.run()
'''
WAYS = ("minimal", "serve", "serve-no-front")


def server_cpu_s() -> float:
    """CPU seconds (user + system) used so far by our child processes that are alive: the
    server the client spawned (whose own children are not counted)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # fields[1] is the parent pid
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


async def time_to_tools(params: StdioServerParameters) -> tuple[float, float]:
    """Seconds from the spawn of the server to the answer of tools/list, and the CPU
    seconds the server had used by then (the figure a busy machine stretches, not changes)."""
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=120) as client:
        tools = await client.list_tools()
        elapsed = time.perf_counter() - started
        cpu = server_cpu_s()
    if not tools.tools:
        raise SystemExit("the server listed no tools")
    return elapsed, cpu


def minimal_parameters(workdir: Path) -> StdioServerParameters:
    script = workdir / "minimal_server.py"
    script.write_text(MINIMAL, encoding="utf-8")
    return StdioServerParameters(command=sys.executable, args=["-P", str(script)], cwd=str(workdir))


def measure(workdir: Path, rounds: int) -> dict[str, list[tuple[float, float]]]:
    repo, config, env = build_demo(workdir / "demo")
    del repo
    params: dict[str, Any] = {
        "minimal": minimal_parameters(workdir),
        "serve": server_parameters(config, env, workdir / "demo"),
        # The same without the stdio front (server/_front.py): the SDK answers once loaded.
        "serve-no-front": server_parameters(
            config, {**env, "PATCHWARDEN_FRONT": "0"}, workdir / "demo"
        ),
    }
    times: dict[str, list[tuple[float, float]]] = {way: [] for way in WAYS}
    for number in range(rounds + 1):  # round 0 warms the page cache and is not counted
        order = WAYS if number % 2 else tuple(reversed(WAYS))
        row = {way: anyio.run(time_to_tools, params[way]) for way in order}
        if number:
            for way in WAYS:
                times[way].append(row[way])
            print(
                f"round {number}: "
                + ", ".join(f"{w} {row[w][0]:.3f} s (cpu {row[w][1]:.2f} s)" for w in WAYS),
                flush=True,
            )
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--workdir", type=Path)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pw-startup-") as scratch:
        times = measure(options.workdir or Path(scratch), options.rounds)
    wall = {way: statistics.median(t for t, _ in times[way]) for way in WAYS}
    cpu = {way: statistics.median(c for _, c in times[way]) for way in WAYS}
    print("median wall: " + ", ".join(f"{w} {wall[w]:.3f} s" for w in WAYS))
    print("median cpu: " + ", ".join(f"{w} {cpu[w]:.2f} s" for w in WAYS))
    for way in WAYS[1:]:
        print(
            f"ratio {way}/minimal: wall {wall[way] / wall['minimal']:.2f}, "
            f"cpu {cpu[way] / cpu['minimal']:.2f}"
        )


if __name__ == "__main__":
    main()
