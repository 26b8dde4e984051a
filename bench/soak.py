"""Long runs stay flat: descriptors, processes, memory and state on disk per request.

    python bench/soak.py [--workspaces 8] [--submissions 500] [--warm-calls 1000]
                         [--every 50] [--workdir D]

Two soaks on a small repository (one property, one seed: a submission costs two
sandboxed pytest runs, so the soak measures the service rather than the tests):

- **hosted**: ``serve --transport http --hosted`` with N workspaces, each an agent (the
  ``mcp`` SDK over streamable HTTP) that keeps its connection and submits patch after patch
  (a new file each time); the submissions run in rounds of ``--every``, all agents side by
  side, and between rounds the server is sampled;
- **warm**: ``patchwarden score --warm`` called one after the other on one patch; the warm
  scorer is sampled every ``--every`` calls.

A sample: open descriptors and RSS summed over the process and its descendants, the
number of those processes, and the bytes under the state directories (the scorer's and the
server's; the log directory grows by one evidence bundle per verdict by design and is
reported apart). Prints the samples and, per metric, the least-squares slope per 100
requests. tests/test_soak.py runs a short one and asserts the slopes stay flat.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
ENTRY = [sys.executable, "-P", "-m", "patchwarden"]
CONTRACT = "contract/differential-contract.yaml"
FILES = {
    "mathlib.py": "def double(n):\n    return n * 2\n",
    "tests/properties/test_double.py": (
        "from mathlib import double\n\n\ndef test_double_is_even():\n"
        "    assert double(3) % 2 == 0\n"
    ),
    CONTRACT: (
        "contract_version: 1\nseeds: [11]\nspec_paths: [tests/properties]\nproperties:\n"
        "  - id: prop.double_is_even\n"
        '    test: "tests/properties/test_double.py::test_double_is_even"\n'
    ),
}
METRICS = ("fds", "processes", "rss_kib", "state_kib")
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "soak",
    "GIT_AUTHOR_EMAIL": "soak@patchwarden.invalid",
    "GIT_COMMITTER_NAME": "soak",
    "GIT_COMMITTER_EMAIL": "soak@patchwarden.invalid",
}


# -- measuring ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    requests: int
    fds: int
    processes: int
    rss_kib: int
    state_kib: int
    log_kib: int


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    return children


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process descended from it, alive now."""
    children, tree, todo = _children(), [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def du_kib(*paths: Path) -> int:
    total = 0
    for path in paths:
        for root, _, files in os.walk(path):
            for name in files:
                with contextlib.suppress(OSError):  # removed while we walked
                    total += os.lstat(os.path.join(root, name)).st_size
    return total // 1024


SETTLE_S = 10.0
"""How long a sample waits for what a request left to go (a run being reaped after its
answer went out, a closed connection's socket): a sample counts what stays, not what is on
its way out. A leak stays, so waiting cannot hide it."""
STEADY_S = 1.0
"""The process tree and its descriptors unchanged this long: the sample is taken."""


def _census(pid: int) -> tuple[list[int], int]:
    tree = process_tree(pid)
    return tree, sum(_fds(p) for p in tree)


def sample(requests: int, pid: int, state: list[Path], logs: Path) -> Sample:
    deadline = time.monotonic() + SETTLE_S
    (tree, fds), steady_since = _census(pid), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - steady_since < STEADY_S:
        time.sleep(0.1)
        now, now_fds = _census(pid)
        if len(now) != len(tree) or now_fds != fds:
            tree, fds, steady_since = now, now_fds, time.monotonic()
    return Sample(
        requests=requests,
        fds=fds,
        processes=len(tree),
        rss_kib=sum(_rss_kib(p) for p in tree),
        state_kib=du_kib(*state),
        log_kib=du_kib(logs),
    )


def slope(samples: list[Sample], metric: str) -> float:
    """Least-squares slope of ``metric`` per request."""
    xs = [float(s.requests) for s in samples]
    ys = [float(getattr(s, metric)) for s in samples]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def report(name: str, samples: list[Sample]) -> dict[str, float]:
    print(f"{name}: requests fds processes rss_kib state_kib log_kib")
    for s in samples:
        print(f"  {s.requests:6d} {s.fds:4d} {s.processes:3d} {s.rss_kib:8d} {s.state_kib:8d} "
              f"{s.log_kib:8d}")  # fmt: skip
    slopes = {metric: slope(samples, metric) for metric in (*METRICS, "log_kib")}
    print(f"{name}: slope per 100 requests: "
          + ", ".join(f"{m} {v * 100:+.2f}" for m, v in slopes.items()))  # fmt: skip
    return slopes


# -- the repository and the config --------------------------------------------------------


@dataclass(frozen=True)
class Soaked:
    repo: Path
    config: Path
    env: dict[str, str]
    state: list[Path]
    logs: Path
    port: int


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_IDENTITY},
    ).stdout.strip()


def build(workdir: Path, max_submissions: int) -> Soaked:
    repo = workdir / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "--initial-branch=main")
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "--all")
    _git(repo, "commit", "-q", "--no-verify", "-m", "base")
    _git(repo, "tag", "base")
    (repo / "notes.txt").write_text("a patch\n")
    _git(repo, "add", "--all")
    _git(repo, "commit", "-q", "--no-verify", "-m", "patch")
    _git(repo, "tag", "patch")
    _git(repo, "checkout", "-q", "--detach", "base")
    port = _free_port()
    config = workdir / "config.yaml"
    config.write_text(
        f"scorer:\n  state_dir: {json.dumps(str(workdir / 'scorer'))}\n"
        f"  log_dir: {json.dumps(str(workdir / 'logs'))}\n"
        f"agent:\n  http_port: {port}\n  max_submissions: {max_submissions}\n"
    )
    env = {**os.environ, "XDG_STATE_HOME": str(workdir / "state")}
    env.pop("PATCHWARDEN_WARM", None)
    return Soaked(
        repo=repo,
        config=config,
        env=env,
        state=[workdir / "scorer", workdir / "state"],
        logs=workdir / "logs",
        port=port,
    )


# -- the hosted soak ----------------------------------------------------------------------


@contextmanager
def hosted_server(soaked: Soaked) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A running ``serve --hosted`` and its operator token; stopped (SIGINT) on exit."""
    token = secrets.token_urlsafe(24)
    process = subprocess.Popen(
        [*ENTRY, "serve", "--config", str(soaked.config), "--transport", "http", "--hosted"],
        env={**soaked.env, "PATCHWARDEN_OPERATOR_TOKEN": token},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", soaked.port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the hosted server did not start") from None
                time.sleep(0.1)
        yield process, token
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _agent_round(client: Any, agent: int, first: int, count: int) -> None:
    for number in range(first, first + count):
        path = f"soak/agent{agent}_{number}.txt"
        wrote = await client.call_tool("write_file", {"path": path, "content": f"{number}\n"})
        if wrote.is_error:
            raise SystemExit(f"write_file failed: {wrote.content}")
        verdict = await client.call_tool("submit_patch", {"message": f"soak {number}"})
        if verdict.is_error:
            raise SystemExit(f"submit_patch failed: {verdict.content}")


def soak_hosted(
    soaked: Soaked,
    workspaces: int,
    submissions: int,
    every: int,
    churn: int = 0,
    on_sample: Callable[[Sample], None] | None = None,
) -> list[Sample]:
    """``submissions`` in rounds of ``every`` over ``workspaces`` agents that keep their
    connection; ``churn`` more connections per round that list the tools, diff and leave.
    A sample after each round."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url = f"http://127.0.0.1:{soaked.port}"
    with hosted_server(soaked) as (process, token):
        operator = {"Authorization": f"Bearer {token}"}
        created = []
        with httpx2.Client(base_url=url, timeout=300) as http:
            for _ in range(workspaces):
                answer = http.post("/workspaces", json={"repo": str(soaked.repo), "base": "base"},
                                   headers=operator)  # fmt: skip
                if answer.status_code != 201:
                    raise SystemExit(f"POST /workspaces: {answer.status_code} {answer.text}")
                created.append(answer.json())
        samples: list[Sample] = []

        async def run() -> None:
            async with contextlib.AsyncExitStack() as stack:
                clients = []
                for workspace in created:
                    http = httpx2.AsyncClient(
                        headers={"Authorization": f"Bearer {workspace['token']}"}, timeout=600
                    )
                    await stack.enter_async_context(http)
                    transport = streamable_http_client(workspace["mcp_url"], http_client=http)
                    clients.append(await stack.enter_async_context(Client(transport)))
                for client in clients:  # every set-up done before the first sample
                    await client.call_tool("get_contract", {})
                take(0)
                done = 0
                while done < submissions:
                    batch = min(every, submissions - done)
                    # The remainder goes round: no agent runs past its own limit.
                    shares = [batch // workspaces + ((i - done) % workspaces < batch % workspaces)
                              for i in range(workspaces)]  # fmt: skip
                    async with anyio.create_task_group() as tg:
                        for agent, client in enumerate(clients):
                            if shares[agent]:
                                tg.start_soon(_agent_round, client, agent, done, shares[agent])
                    for number in range(churn):
                        await _churn(created[number % workspaces])
                    done += batch
                    take(done)

        def take(requests: int) -> None:
            samples.append(sample(requests, process.pid, soaked.state, soaked.logs))
            if on_sample is not None:
                on_sample(samples[-1])

        anyio.run(run)
    return samples


async def _churn(workspace: dict[str, str]) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {workspace['token']}"})
    transport = streamable_http_client(workspace["mcp_url"], http_client=http)
    async with http, Client(transport) as client:
        await client.list_tools()
        await client.call_tool("diff", {})


# -- the warm soak ------------------------------------------------------------------------


def _warm_pid(state_dir: Path) -> int | None:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"patchwarden.server._warm_scorer" in argv and any(
            str(state_dir).encode() in a for a in argv
        ):
            return int(cmdline.parent.name)
    return None


def soak_warm(
    soaked: Soaked,
    calls: int,
    every: int,
    warmup: int = 1,
    on_sample: Callable[[Sample], None] | None = None,
) -> list[Sample]:
    """``calls`` of ``score --warm`` on one patch; a sample of the warm scorer after call
    ``warmup`` and every ``every`` calls after it. It is stopped (SIGTERM) at the end.

    Between requests the warm scorer may hold the ``git cat-file`` helpers GitPython started
    for the requests before (freed with their Repo objects by the garbage collector): two
    after each request, up to four in the first ones; ``warmup`` skips those."""
    argv = [*ENTRY, "score", "--warm", "--warm-idle", "600", "--config", str(soaked.config),
            "--repo", str(soaked.repo), "--contract", CONTRACT, "--parent", "base",
            "--patch", "patch", "--json"]  # fmt: skip
    samples: list[Sample] = []
    pid: int | None = None
    try:
        for number in range(1, calls + 1):
            done = subprocess.run(argv, env=soaked.env, capture_output=True, text=True,
                                  check=False)  # fmt: skip
            if done.returncode not in (0, 1, 3):
                raise SystemExit(f"score --warm exited {done.returncode}: {done.stderr}")
            if pid is None:
                pid = _warm_pid(soaked.state[0])
                if pid is None:
                    raise SystemExit("no warm scorer is running after the first call")
            if number >= warmup and (number - warmup) % every == 0:
                samples.append(sample(number, pid, soaked.state, soaked.logs))
                if on_sample is not None:
                    on_sample(samples[-1])
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
    return samples


def _progress(sample: Sample) -> None:
    print(f"  sample {sample}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspaces", type=int, default=8)
    parser.add_argument("--submissions", type=int, default=500)
    parser.add_argument("--warm-calls", type=int, default=1000)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--workdir", type=Path)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pw-soak-") as scratch:
        workdir = options.workdir or Path(scratch)
        per_workspace = -(-options.submissions // options.workspaces) + 1
        started = time.monotonic()
        if options.submissions:
            hosted = build(workdir / "hosted", per_workspace)
            samples = soak_hosted(hosted, options.workspaces, options.submissions,
                                  options.every, on_sample=_progress)  # fmt: skip
            report("hosted", samples)
            print(f"hosted: {time.monotonic() - started:.0f} s", flush=True)
        started = time.monotonic()
        if options.warm_calls:
            warm = build(workdir / "warm", 1)
            report("warm", soak_warm(warm, options.warm_calls, options.every, on_sample=_progress))
            print(f"warm: {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
