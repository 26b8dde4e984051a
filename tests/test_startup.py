"""``serve`` answers discovery and ``tools/list`` before its slow set-up is done.

A real client over stdio (the ``mcp`` SDK) with pydantic-ai's default start-up timeout of
5 s, against ``patchwarden serve`` on the orders example while every core is kept busy by
processes of this test. The first tool call then waits for the worktree, the test-id
collection and the scorer, and works. Timings against a minimal server: bench/startup.py.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import git
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from patchwarden.server._demo import build_demo, server_parameters

pytestmark = pytest.mark.bwrap

CONTRACT = "contract/differential-contract.yaml"
IDENTITY = {
    "GIT_AUTHOR_NAME": "op",
    "GIT_AUTHOR_EMAIL": "op@example.invalid",
    "GIT_COMMITTER_NAME": "op",
    "GIT_COMMITTER_EMAIL": "op@example.invalid",
}

CLIENT_STARTUP_TIMEOUT_S = 5.0
"""pydantic-ai's default for an MCP server to answer (Codex CLI allows 10 s)."""
BUSY_FOR_S = 120
"""Each busy process stops by itself after this long, whatever happens to the test."""
BUSY = f"import time\nend = time.monotonic() + {BUSY_FOR_S}\nwhile time.monotonic() < end:\n pass\n"


@contextlib.contextmanager
def busy_cores() -> Iterator[int]:
    """One spinning process per core for the block (killed on exit)."""
    count = os.cpu_count() or 1
    spinners = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(count)]
    try:
        yield count
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()


def test_a_client_with_a_five_second_startup_timeout_starts_on_a_loaded_machine(
    tmp_path: Path,
) -> None:
    repo, config, env = build_demo(tmp_path / "demo")
    params = server_parameters(config, env, tmp_path / "demo")

    async def session() -> tuple[set[str], dict[str, object]]:
        with anyio.fail_after(CLIENT_STARTUP_TIMEOUT_S) as startup:
            async with Client(params, read_timeout_seconds=300) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                startup.deadline = math.inf  # started in time: the calls have no such limit
                contract = await client.call_tool("get_contract", {})  # waits for the set-up
                assert not contract.is_error, contract.content
                listing = await client.call_tool("list_files", {"path": "orders"})
                assert not listing.is_error, listing.content
                seen = {"contract": contract.structured_content, **listing.structured_content}
                return tools, seen

    with busy_cores() as spinners:
        assert spinners >= 1
        tools, seen = anyio.run(session)
    assert {"get_contract", "list_files", "submit_patch", "run_tests"} <= tools
    contract = seen["contract"]
    assert isinstance(contract, dict) and contract["submissions_left"] > 0
    paths = {entry["path"] for entry in seen["entries"]}  # type: ignore[attr-defined]
    assert "orders/__init__.py" in paths
    assert git.Repo(repo).git.worktree("list").count("\n") == 0  # removed when the client left


TYPO = "tests/properties/test_orders.py::test_total_non_negativ"


def test_a_set_up_that_fails_after_serving_fails_every_tool_call_with_its_line(
    tmp_path: Path,
) -> None:
    """A contract id that does not exist on the base is found by the collection, which runs
    while ``tools/list`` is already answered: each tool call then fails with the line the
    command line prints, the same line is on stderr at once, and serve exits 2."""
    repo, config, env = build_demo(tmp_path / "demo")
    contract = "contract/typo.yaml"
    text = git.Repo(repo).git.show(f"base:{CONTRACT}").replace(TYPO + "e", TYPO)
    (repo / contract).write_text(text + "\n")
    r = git.Repo(repo)
    r.git.add(contract)
    r.git.commit("-q", "--no-verify", "-m", "a typo", env=IDENTITY)
    line_no = next(n for n, line in enumerate(text.splitlines(), 1) if TYPO in line)
    line = (
        f"{contract}:{line_no}: property prop.order_total_non_negative: test id {TYPO} is not "
        f"collected on the base (did you mean {TYPO}e?)"
    )
    params = server_parameters(config, env, tmp_path / "demo")
    params = params.model_copy(
        update={"args": [*params.args, "--base", "HEAD", "--contract", contract]}
    )
    errlog_path = tmp_path / "stderr.txt"

    async def calls() -> tuple[set[str], list[str]]:
        with errlog_path.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as c:
                tools = {t.name for t in (await c.list_tools()).tools}
                results = [await c.call_tool(name, {}) for name in ("get_contract", "diff")]
        assert all(result.is_error for result in results)
        return tools, [" ".join(getattr(x, "text", "") for x in r.content) for r in results]

    tools, texts = anyio.run(calls)
    assert "submit_patch" in tools
    assert texts == [line, line]
    assert f"patchwarden: error: {line}\n" in errlog_path.read_text()
    assert r.git.worktree("list").count("\n") == 0
    audit = (tmp_path / "demo" / "logs" / "audit.jsonl").read_text().splitlines()
    assert sum('"setup_failed"' in entry for entry in audit) == 1

    trial = subprocess.run(
        [params.command, *params.args],
        env=params.env,
        cwd=params.cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (trial.returncode, trial.stdout, trial.stderr) == (
        2,
        "",
        f"patchwarden: error: {line}\n",
    )
