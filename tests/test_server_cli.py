"""``patchwarden serve`` start-up refusals, the HTTP transport and ``patchwarden demo``."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import git
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from patchwarden.server.cli import cli

ROOT = Path(__file__).resolve().parents[1]
MAKE_REPO = ROOT / "examples" / "orders" / "make_repo.py"
ENTRY = [sys.executable, "-P", "-m", "patchwarden"]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("cli") / "orders"
    subprocess.run([sys.executable, str(MAKE_REPO), str(repo)], check=True, capture_output=True)
    return repo


def _config(tmp_path: Path, repo: Path, extra: str = "") -> Path:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"scorer:\n  state_dir: {json.dumps(str(tmp_path / 'scorer'))}\n"
        f"  log_dir: {json.dumps(str(tmp_path / 'logs'))}\n"
        f"agent:\n  repo: {json.dumps(str(repo))}\n  base: base\n{extra}"
    )
    return config


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repo", "{tmp}/nowhere"], "not a git repository"),
        (["--base", "no-such-ref"], "unknown revision 'no-such-ref'"),
        (["--contract", "contract/missing.yaml"], "contract not found"),
        (["--contract", "orders/total.py"], "orders/total.py:1: not valid YAML"),
        (["--transport", "carrier-pigeon"], "invalid value"),
    ],
)
def test_serve_refuses_a_broken_setup_in_one_line(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = CliRunner().invoke(cli, ["serve", "--config", str(_config(tmp_path, example)), *args])
    assert result.exit_code == 2, result.output
    assert message.lower() in result.output.lower()
    if "invalid value" not in message:
        assert len(result.output.strip().splitlines()) == 1, result.output
        assert "Traceback" not in result.output
    assert git.Repo(example).git.worktree("list").count("\n") == 0


def _commit_broken_base(repo: Path, tmp_path: Path) -> Path:
    clone = tmp_path / "broken"
    subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "clone", "-q", str(repo), str(clone)], check=True
    )
    r = git.Repo(clone)
    (clone / "contract" / "quarantine.json").write_text(
        json.dumps(
            {
                "base": r.head.commit.hexsha,
                "runs": 3,
                "tests": [],
                "broken": [
                    {"test_id": "tests/test_unit.py::test_order_discount", "failures": 3, "runs": 3}
                ],
            }
        )
    )
    r.git.add("--all")
    r.git.commit(
        "-q",
        "--no-verify",
        "-m",
        "sweep",
        env={
            "GIT_AUTHOR_NAME": "op",
            "GIT_AUTHOR_EMAIL": "op@x.invalid",
            "GIT_COMMITTER_NAME": "op",
            "GIT_COMMITTER_EMAIL": "op@x.invalid",
        },
    )
    return clone


@pytest.mark.bwrap
def test_serve_refuses_a_broken_base_unless_waived(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    clone = _commit_broken_base(example, tmp_path)
    config = _config(tmp_path, clone)
    config.write_text(config.read_text().replace("base: base", "base: HEAD"))
    result = CliRunner().invoke(cli, ["serve", "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert "the base is broken (tests/test_unit.py::test_order_discount)" in result.output
    assert "waive_broken_base" in result.output


def test_serve_refuses_a_bad_config(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("agent:\n  max_submissions: 0\n")
    result = CliRunner().invoke(cli, ["serve", "--config", str(config)])
    assert result.exit_code == 2
    assert "max_submissions" in result.output and str(config) in result.output


@pytest.mark.bwrap
def test_serve_refuses_when_the_scorer_state_is_unusable(example: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    config = _config(tmp_path, example)
    config.write_text(config.read_text().replace(str(tmp_path / "scorer"), str(blocker / "scorer")))
    done = subprocess.run(
        [*ENTRY, "serve", "--config", str(config)],
        env=_env(tmp_path),
        stdin=subprocess.PIPE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert str(blocker) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert git.Repo(example).git.worktree("list").count("\n") == 0


@pytest.mark.bwrap
def test_sigterm_stops_the_session_cleanly(example: Path, tmp_path: Path) -> None:
    config = _config(tmp_path, example)
    with subprocess.Popen(
        [*ENTRY, "serve", "--config", str(config)],
        env=_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as process:
        seen = _read_until(process.stderr, r"worktree (\S+);", 60)
        worktree = Path(re.findall(r"worktree (\S+);", seen)[0])
        assert worktree.is_dir()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    assert not worktree.exists()
    assert git.Repo(example).git.worktree("list").count("\n") == 0


# -- streamable HTTP ------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _read_until(stream: object, pattern: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    seen = ""
    fd = stream.fileno()  # type: ignore[attr-defined]
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 4096).decode(errors="replace")
            if not chunk:
                break
            seen += chunk
            if re.search(pattern, seen):
                return seen
    raise AssertionError(f"{pattern!r} not seen on stderr: {seen}")


def _wait_for_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture
def http_server(example: Path, tmp_path: Path) -> Iterator[tuple[int, str]]:
    port = _free_port()
    config = _config(tmp_path, example, f"  http_port: {port}\n")
    process = subprocess.Popen(
        [*ENTRY, "serve", "--config", str(config), "--transport", "http"],
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        seen = _read_until(process.stderr, r"listening on", 60)
        token = re.findall(r"bearer token: (\S+)\n", seen)[0]
        _wait_for_port(port, 30)
        yield port, token
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
        finally:
            assert process.stderr is not None
            process.stderr.close()
    assert git.Repo(example).git.worktree("list").count("\n") == 0


@pytest.mark.bwrap
def test_http_transport_needs_the_token_and_a_local_host(http_server: tuple[int, str]) -> None:
    port, token = http_server
    url = f"http://127.0.0.1:{port}/mcp"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx2.Client() as http:
        assert http.post(url, json=body, headers=headers).status_code == 401
        wrong = {**headers, "Authorization": "Bearer not-the-token"}
        assert http.post(url, json=body, headers=wrong).status_code == 401
        rebinding = {**headers, "Authorization": f"Bearer {token}", "Host": "evil.example"}
        assert http.post(url, json=body, headers=rebinding).status_code == 421

    async def list_tools() -> set[str]:
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with client, Client(streamable_http_client(url, http_client=client)) as mcp:
            tools = {t.name for t in (await mcp.list_tools()).tools}
            result = await mcp.call_tool("read_file", {"path": "orders/__init__.py"})
            assert not result.is_error
            return tools

    assert "submit_patch" in anyio.run(list_tools)


# -- the demo ---------------------------------------------------------------------


@pytest.mark.bwrap
def test_demo_plays_three_patches_and_exits_0(tmp_path: Path) -> None:
    done = subprocess.run(
        [*ENTRY, "demo", "--workdir", str(tmp_path / "demo")],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"fix\s+accept\s", out) and re.search(r"regression\s+reject\s", out)
    assert re.search(r"refactor\s+propose_freeze\s", out)
    assert "all three verdicts as expected" in out
    bundles = list((tmp_path / "demo" / "logs" / "verdicts").iterdir())
    assert len(bundles) == 3 and all((b / "decision.json").is_file() for b in bundles)
    assert out.count("evidence: ") == 3


@pytest.mark.bwrap
def test_the_paths_demo_plays_the_ctest_example(tmp_path: Path) -> None:
    """The same agent session on a C++ project built with CMake and tested with ctest
    (docs/design/runners.md): run_tests builds and runs ctest, the verdicts are the same."""
    done = subprocess.run(
        [*ENTRY, "demo", "--example", "paths", "--workdir", str(tmp_path / "demo")],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "list_files: 6 *.cpp files" in out
    # run_tests through the MCP client on the base, at the contract's first seed: the bug
    # shows, the failure leading with the failed assertion's file:line.
    assert "  first failure: no_backslash: tests/no_backslash.cpp:9\n" in out
    assert re.search(r"fix\s+accept\s+prop\.no_backslash=parent_fail_cleared", out)
    assert re.search(r"regression\s+reject\s+.*prop\.idempotent=regression", out)
    assert re.search(r"refactor\s+propose_freeze\s+prop\.no_backslash=shared_variant_fail", out)
    assert "runner_trust=review" in out
    assert "all three verdicts as expected" in out
