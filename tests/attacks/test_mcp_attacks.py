"""Attacks through one real `patchwarden serve` session over stdio, with the SDK client.

One server for the whole module (its scorer child, its worktree). Before each attack the
worktree is reset to the base from the outside (a sandboxed run may have renamed directories
or planted links, which no tool can undo); after each attack the server must still answer
and an honest fix (the `fix` overlay) must still get `accept`.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters

from tests._tool_sessions import until_scored

from . import tally
from .cases import CONTRACT_FILE, FIX_TOTAL, MANIFEST_FILE, PROPERTY_FILE
from .lab import (
    ATTACK_LIMITS,
    ATTACK_UID,
    OUTSIDE_FILES,
    Observation,
    judge,
    remove_path,
    snapshot_dir,
)
from .mcp_cases import MCP_CASES, REPORT_FILE, Call, McpCase, report_of

pytestmark = pytest.mark.bwrap

CLIENT_TIMEOUT_S = 600


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


@dataclass
class McpLab:
    portal: BlockingPortal
    client: Client
    repo: Path
    base: str
    worktree: Path
    outside: Path
    marker: Path
    outside_snapshot: dict[str, bytes]

    def fill(self, value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("@@OUTSIDE@@", str(self.outside)).replace(
                "@@MARKER@@", str(self.marker)
            )
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        def once(tool: str, arguments: dict[str, Any]) -> Any:
            return self.portal.call(lambda: self.client.call_tool(tool, arguments))

        return until_scored(tool, once(tool, self.fill(arguments)), once)

    def reset_worktree(self) -> None:
        """Everything but the .git file back to the base commit's bytes."""
        for entry in list(self.worktree.iterdir()):
            if entry.name != ".git":
                remove_path(entry)
        archive = subprocess.run(
            ["git", "-C", str(self.repo), "archive", "--format=tar", self.base],
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(self.worktree, filter="data")

    def submit(self, message: str) -> tuple[Observation | None, str]:
        started = time.monotonic()
        result = self.call("submit_patch", {"message": message})
        duration = time.monotonic() - started
        if result.is_error:
            return None, _text(result)
        summary = dict(result.structured_content)
        return (
            Observation(
                exit_code=0,
                decision=summary["decision"],
                reasons={r["prop"]: r["reason"] for r in summary["results"]},
                findings={c["check"]: c["outcome"] for c in summary["scorecard"]},
                stderr="",
                duration_s=duration,
                verdict_id=summary["verdict_id"],
            ),
            "",
        )


@pytest.fixture(scope="module")
def mcp_lab(example_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpLab]:
    root = tmp_path_factory.mktemp("mcp-attacks")
    repo = root / "orders"
    git.Repo.clone_from(str(example_repo), str(repo), no_hardlinks=True).close()
    outside = root / "outside"
    for rel, content in OUTSIDE_FILES.items():
        (outside / rel).parent.mkdir(parents=True, exist_ok=True)
        (outside / rel).write_text(content)
    limits = "".join(f"    {key}: {value}\n" for key, value in ATTACK_LIMITS.items())
    config = root / "config.yaml"
    config.write_text(
        # These cases test the in-process layers (the fallback of the isolated oracle),
        # as the score lab's older cases do; the isolated oracle's own cases are in
        # tests/attacks/isolation_cases.py (docs/design/isolated-oracle.md).
        f"sandbox:\n  run_as_uid: {ATTACK_UID}\n  oracle: in-process\n  limits:\n{limits}"
        f"scorer:\n  state_dir: {json.dumps(str(root / 'state' / 'scorer'))}\n"
        f"  log_dir: {json.dumps(str(root / 'logs'))}\n  run_limits:\n{limits}"
        f"agent:\n  repo: {json.dumps(str(repo))}\n  base: base\n"
        f"  worktree_dir: {json.dumps(str(root / 'worktree'))}\n  max_submissions: 100\n"
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "patchwarden", "serve", "--config", str(config)],
        env={"XDG_STATE_HOME": str(root / "state")},
        cwd=str(root),
    )
    with start_blocking_portal() as portal:
        client_cm = portal.wrap_async_context_manager(
            Client(params, read_timeout_seconds=CLIENT_TIMEOUT_S)
        )
        client = client_cm.__enter__()
        try:
            # serve answers discovery before its set-up is done (server/_front.py); the
            # worktree exists once the first tool call has waited for it, as an agent's does.
            contract = portal.call(lambda: client.call_tool("get_contract", {}))
            assert not contract.is_error, _text(contract)
            yield McpLab(
                portal=portal,
                client=client,
                repo=repo,
                base=git.Repo(repo).commit("base").hexsha,
                worktree=root / "worktree",
                outside=outside,
                marker=root / "hook-ran",
                outside_snapshot=snapshot_dir(outside),
            )
        finally:
            client_cm.__exit__(None, None, None)


# -- one attack ---------------------------------------------------------------------------------


def _do_calls(lab: McpLab, calls: tuple[Call, ...]) -> tuple[list[str], list[str]]:
    """Run the calls; (problems, notes)."""
    problems, notes = [], []
    for call in calls:
        result = lab.call(call.tool, dict(call.arguments))
        shown = f"{call.tool}({call.arguments.get('path', '')})"
        if call.refused is None and result.is_error:
            problems.append(f"{shown} failed: {_text(result)[:200]}")
        elif call.refused is not None and not result.is_error:
            problems.append(f"{shown} was not refused (expected: {call.refused})")
        elif call.refused is not None and call.refused.lower() not in _text(result).lower():
            problems.append(f"{shown} refused for another reason: {_text(result)[:200]}")
        if call.tool == "run_tests" and not result.is_error:
            counts = result.structured_content["counts"]
            notes.append(f"run_tests {counts}")
    return problems, notes


def _check_report(lab: McpLab, case: McpCase) -> tuple[list[str], list[str]]:
    path = lab.worktree / REPORT_FILE
    if not path.is_file():
        return ([f"the planted test wrote no {REPORT_FILE}"] if case.blocked else []), []
    report = report_of(path.read_text())
    notes = [f"sandbox: {', '.join(f'{k}={v}' for k, v in report.items())}"]
    problems = [
        f"the sandbox let the test {key}" for key in case.blocked if report.get(key) == "ok"
    ]
    return problems, notes


def _probe(lab: McpLab, case: McpCase) -> list[str]:
    if case.probe == "outside_untouched" and snapshot_dir(lab.outside) != lab.outside_snapshot:
        return ["the host directory outside the worktree changed"]
    if case.probe == "contract_paths_unchanged":
        repo = git.Repo(lab.repo)
        changed = [
            rel
            for rel in (CONTRACT_FILE, PROPERTY_FILE, MANIFEST_FILE)
            if (lab.worktree / rel).read_bytes()
            != repo.git.show(f"base:{rel}", strip_newline_in_stdout=False).encode()
        ]
        return [f"changed in the worktree: {', '.join(changed)}"] if changed else []
    return []


def _honest_fix_still_accepted(lab: McpLab) -> list[str]:
    lab.reset_worktree()
    contract = lab.call("get_contract", {})
    if contract.is_error:
        return [f"the server stopped answering: {_text(contract)[:200]}"]
    result = lab.call("write_file", {"path": "orders/total.py", "content": FIX_TOTAL})
    if result.is_error:
        return [f"the honest fix could not be written: {_text(result)[:200]}"]
    observed, error = lab.submit("honest fix after an attack")
    if observed is None:
        return [f"the honest fix was not judged: {error[:200]}"]
    if observed.decision != "accept":
        return [f"after the attack the honest fix got {observed.describe()}"]
    return []


@pytest.mark.parametrize("case", MCP_CASES, ids=[c.name for c in MCP_CASES])
def test_attack_through_the_tools_is_stopped(mcp_lab: McpLab, case: McpCase) -> None:
    started = time.monotonic()
    mcp_lab.reset_worktree()
    problems, notes = _do_calls(mcp_lab, case.calls)
    report_problems, report_notes = _check_report(mcp_lab, case)
    problems += report_problems
    notes += report_notes
    if case.show_agent_run:
        run = mcp_lab.call("run_tests", {})
        notes.append(f"agent's own run_tests: {run.structured_content.get('counts')}")
    observed_text = "; ".join(notes)
    if case.expected is not None:
        observed, error = mcp_lab.submit(f"attack {case.name}")
        if observed is None:
            problems.append(f"submit_patch failed: {error[:300]}")
            observed_text = f"submit failed: {error[:200]}; {observed_text}"
        else:
            problems += judge(case.expected, observed)
            observed_text = f"{observed.describe()}; {observed_text}"
    problems += _probe(mcp_lab, case)
    if mcp_lab.marker.exists():
        problems.append(f"a hook ran: {mcp_lab.marker} exists")
    problems += _honest_fix_still_accepted(mcp_lab)
    tally.record(
        "mcp",
        case.name,
        honest=False,
        expected=case.describe() + "; then the honest fix is accepted",
        observed=observed_text or "as expected",
        problems=problems,
        duration_s=time.monotonic() - started,
    )
    assert not problems, (
        f"the attack got through ({case.layer} should stop it): {case.story}\n"
        f"observed {observed_text}\n" + "\n".join(problems)
    )
