"""``serve --transport http --hosted``: eight agents, two repositories, one server.

A real server process, the ``mcp`` SDK over streamable HTTP for every agent, real git,
bubblewrap and pytest. Each agent writes one example patch (the fix or the regression) in
its own workspace and submits it; each must get its own patch's verdict while the others
work beside it, see only its own files, and be refused everywhere else.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import git
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.bwrap

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "orders"
ENTRY = [sys.executable, "-P", "-m", "patchwarden"]
DECISION = {"fix": "accept", "regression": "reject"}
AGENTS = 8


@dataclass
class Hosted:
    url: str
    operator: dict[str, str]
    repos: list[Path]
    logs: Path
    process: subprocess.Popen[bytes]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert process.poll() is None, "the hosted server exited"
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _worktrees(repo: Path) -> list[str]:
    listing = git.Repo(repo).git.worktree("list", "--porcelain")
    return [line[9:] for line in listing.splitlines() if line.startswith("worktree ")][1:]


@pytest.fixture(scope="module")
def hosted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosted]:
    base = tmp_path_factory.mktemp("hosted")
    repos = []
    for name in ("orders-a", "orders-b"):
        repo = base / name
        subprocess.run(
            [sys.executable, str(EXAMPLES / "make_repo.py"), str(repo)],
            check=True,
            capture_output=True,
        )
        repos.append(repo)
    port = _free_port()
    config = base / "config.yaml"
    config.write_text(
        f"scorer:\n  state_dir: {json.dumps(str(base / 'scorer'))}\n"
        f"  log_dir: {json.dumps(str(base / 'logs'))}\n"
        f"agent:\n  http_port: {port}\n  max_submissions: 2\n"
    )
    token = secrets.token_urlsafe(24)
    token_file = base / "operator-token"
    token_file.write_text(token + "\n")
    env = {**os.environ, "XDG_STATE_HOME": str(base / "state")}
    stderr = (base / "stderr.txt").open("wb")
    process = subprocess.Popen(
        [*ENTRY, "serve", "--config", str(config), "--transport", "http", "--hosted",
         "--operator-token-file", str(token_file)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )  # fmt: skip
    try:
        _wait_for_port(port, process, 60)
        yield Hosted(
            url=f"http://127.0.0.1:{port}",
            operator={"Authorization": f"Bearer {token}"},
            repos=repos,
            logs=base / "logs",
            process=process,
        )
    finally:
        process.send_signal(signal.SIGINT)
        try:
            assert process.wait(timeout=120) == 0
        finally:
            process.kill()
            stderr.close()
    text = (base / "stderr.txt").read_text()
    assert token not in text  # never logged
    for repo in repos:
        assert _worktrees(repo) == []  # every workspace removed on shutdown


def _overlay(name: str) -> dict[str, str]:
    directory = EXAMPLES / "patches" / name
    return {
        p.relative_to(directory).as_posix(): p.read_text()
        for p in directory.rglob("*")
        if p.is_file() and p.name != "message.txt"
    }


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def _agent(url: str, token: str, patch: str) -> dict[str, Any]:
    """Write the example patch, submit it, and report what the agent saw."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=600)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        for path, content in _overlay(patch).items():
            wrote = await client.call_tool("write_file", {"path": path, "content": content})
            assert not wrote.is_error, _text(wrote)
        diff = await client.call_tool("diff", {})
        escape = await client.call_tool("read_file", {"path": "../orders-a/orders/__init__.py"})
        verdict = await client.call_tool("submit_patch", {"message": f"example {patch}"})
        assert not verdict.is_error, _text(verdict)
        # Eight scorings share the machine's cores: one may outlast submit_patch's wait.
        while (verdict.structured_content or {}).get("status") == "pending":
            submission = (verdict.structured_content or {})["submission"]
            verdict = await client.call_tool(
                "get_verdict", {"submission": submission, "wait_s": 300}
            )
            assert not verdict.is_error, _text(verdict)
        contract = await client.call_tool("get_contract", {})
    return {
        "verdict": dict(verdict.structured_content or {}),
        "diff": {f["path"] for f in (diff.structured_content or {})["files"]},
        "escape": escape.is_error,
        "left": (contract.structured_content or {})["submissions_left"],
    }


async def _poll(url: str, token: str) -> dict[str, Any]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=600)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        own = await client.call_tool("get_verdict", {"submission": 1, "wait_s": 0})
        past = await client.call_tool("get_verdict", {"submission": 2, "wait_s": 0})
        tools = (await client.list_tools()).tools
    assert not own.is_error and past.is_error
    return {
        "own": (own.structured_content or {})["verdict_id"],
        "past": _text(past).removeprefix("Error executing tool get_verdict: "),
        "id_args": [
            f"{t.name}.{name}"
            for t in tools
            for name in t.input_schema.get("properties", {})
            if "verdict" in name or name in {"id", "bundle"}
        ],
    }


def test_eight_agents_on_two_repositories_each_get_their_own_verdict(hosted: Hosted) -> None:
    with httpx2.Client(base_url=hosted.url, timeout=120) as http:
        assert http.get("/workspaces").status_code == 401
        assert http.get("/workspaces", headers={"Authorization": "Bearer nope"}).status_code == 401
        rebinding = {**hosted.operator, "Host": "evil.example"}
        assert http.get("/workspaces", headers=rebinding).status_code == 421
        foreign = {**hosted.operator, "Origin": "http://evil.example"}
        assert http.get("/workspaces", headers=foreign).status_code == 403
        bad = http.post("/workspaces", json={"repo": str(hosted.repos[0]), "base": "nope"},
                        headers=hosted.operator)  # fmt: skip
        assert bad.status_code == 400 and "unknown revision 'nope'" in bad.json()["error"]
        assert http.post("/workspaces", json={"repo": "x"}, headers=hosted.operator).json() == {
            "error": "base: Field required"
        }
        created = []
        for number in range(AGENTS):
            answer = http.post(
                "/workspaces",
                json={"repo": str(hosted.repos[number % 2]), "base": "base"},
                headers=hosted.operator,
            )
            assert answer.status_code == 201, answer.text
            created.append(answer.json())
        assert all(set(c) == {"id", "mcp_url", "token"} for c in created)
        assert len({c["id"] for c in created}) == len({c["token"] for c in created}) == AGENTS
        listing = http.get("/workspaces", headers=hosted.operator).json()["workspaces"]
        assert {w["id"] for w in listing} == {c["id"] for c in created}
        assert not any(c["token"] in json.dumps(listing) for c in created)
        # A workspace is prepared after its 201 (its worktree, its env): counted once every
        # one says it is ready (a bound on waiting, not a timing claim).
        deadline = time.monotonic() + 300
        while not all(w["ready"] for w in listing) and time.monotonic() < deadline:
            assert not any(w["error"] for w in listing), listing
            time.sleep(0.2)
            listing = http.get("/workspaces", headers=hosted.operator).json()["workspaces"]
        assert all(w["ready"] for w in listing), listing
        for repo in hosted.repos:
            assert len(_worktrees(repo)) == AGENTS // 2  # each workspace its own worktree

        # Another workspace's address with this one's token, an unknown id, the operator
        # routes with an agent's token: all 401, whether or not the workspace exists.
        mcp = {"Accept": "application/json, text/event-stream"}
        ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        first, second = created[0], created[1]
        for url, token in [
            (second["mcp_url"], first["token"]),
            (f"{hosted.url}/workspaces/{'0' * 12}/mcp", first["token"]),
            (f"{hosted.url}/workspaces", first["token"]),
            (first["mcp_url"], hosted.operator["Authorization"].removeprefix("Bearer ")),
        ]:
            refused = http.post(url, json=ping, headers={**mcp, "Authorization": f"Bearer {token}"})
            assert refused.status_code == 401, (url, refused.text)

    patches = ["fix" if number % 4 < 2 else "regression" for number in range(AGENTS)]
    seen: dict[int, dict[str, Any]] = {}

    async def all_agents() -> None:
        async def one(number: int) -> None:
            seen[number] = await _agent(
                created[number]["mcp_url"], created[number]["token"], patches[number]
            )

        async with anyio.create_task_group() as tg:
            for number in range(AGENTS):
                tg.start_soon(one, number)

    anyio.run(all_agents)
    for number in range(AGENTS):
        verdict = seen[number]["verdict"]
        assert verdict["decision"] == DECISION[patches[number]], (number, verdict)
        assert seen[number]["diff"] == set(_overlay(patches[number])), number
        assert seen[number]["escape"] is True
        assert seen[number]["left"] == 1  # its own limit: 2, one used
    verdict_ids = [seen[n]["verdict"]["verdict_id"] for n in range(AGENTS)]
    assert len(set(verdict_ids)) == AGENTS
    # Verdicts are reached by the workspace's own submission numbers, never by an id: the
    # second agent's "submission 1" is its own verdict, a number past its own is refused,
    # and no tool takes a verdict id that could name another workspace's.
    polled = anyio.run(_poll, created[1]["mcp_url"], created[1]["token"])
    assert polled["own"] == verdict_ids[1]
    assert polled["past"] == "there is no submission 2: this session has made 1"
    assert polled["id_args"] == []
    for number, workspace in enumerate(created):
        audit = hosted.logs / "workspaces" / workspace["id"] / "audit.jsonl"
        lines = [json.loads(line) for line in audit.read_text().splitlines()]
        assert {line["session"] for line in lines} == {workspace["id"]}
        assert [line["tool"] for line in lines if line.get("tool") == "submit_patch"] == [
            "submit_patch"
        ]
        others = [v for n, v in enumerate(verdict_ids) if n != number]
        assert not any(v in audit.read_text() for v in others)
        for other in created:
            if other is not workspace:
                assert other["token"] not in audit.read_text()

    gone = created[0]
    with httpx2.Client(base_url=hosted.url, timeout=120) as http:
        path = f"/workspaces/{gone['id']}"
        assert http.delete(path).status_code == 401
        assert http.delete(path, headers=hosted.operator).json() == {
            "id": gone["id"],
            "deleted": True,
        }
        assert http.delete(path, headers=hosted.operator).status_code == 404
        listing = http.get("/workspaces", headers=hosted.operator).json()["workspaces"]
        assert gone["id"] not in {w["id"] for w in listing} and len(listing) == AGENTS - 1
        own = {**mcp, "Authorization": f"Bearer {gone['token']}"}
        refused = http.post(gone["mcp_url"], json=ping, headers=own)
        assert refused.status_code == 401
    assert len(_worktrees(hosted.repos[0])) == AGENTS // 2 - 1
    assert (hosted.logs / "verdicts" / verdict_ids[0] / "decision.json").is_file()  # kept
    assert re.fullmatch(r"[0-9a-f]{12}", gone["id"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--hosted"], "serve: --hosted needs --transport http"),
        (["--hosted", "--transport", "http", "--repo", "."], "takes repo, base and contract"),
        (["--scorer-slots", "2"], "--operator-token-file and --scorer-slots need --hosted"),
        (["--hosted", "--transport", "http"], "needs an operator token of at least 16"),
    ],
)
def test_hosted_refuses_a_bad_start_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    from click.testing import CliRunner

    from patchwarden.server.cli import cli

    monkeypatch.delenv("PATCHWARDEN_OPERATOR_TOKEN", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    result = CliRunner().invoke(cli, ["serve", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1
