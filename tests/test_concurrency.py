"""Eight ``patchwarden score`` processes at once on one repository, one state directory and
one log directory (docs/scale.md: any number may share them).

They start together on a state directory without a clone, so they race to create it, to
fetch into it and to add and remove worktrees, and they append to one index. Every process
must give its verdict, every verdict must have one whole index line and one whole bundle,
and nothing may be left behind in the clone or the state directory.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import git
import pytest

from tests._runs import expected_run_files
from tests.conftest import BUNDLE_FILES, CONTRACT, EXAMPLE

pytestmark = pytest.mark.bwrap

PROCESSES = 8
EXPECTED = {c["patch"]: c for c in json.loads((EXAMPLE / "expected.json").read_text())}
EXIT = {"accept": 0, "reject": 1, "propose_freeze": 3}
WARM_SCORE = ("patchwarden", "score", "--warm")
PATCHES = ["patch-fix", "patch-regression", "patch-refactor", "patch-fix-docs"] * 2


def _score_all(command: tuple[str, ...], repo: Path, logs: Path, env: dict[str, str]) -> list[dict]:
    """Start ``command`` once per patch of PATCHES, all at once; each one's decision, after
    checking its exit status, its empty stderr and its per-property reasons."""

    def argv(patch: str) -> list[str]:
        return [*command, "--repo", str(repo), "--contract", CONTRACT,
                "--parent", EXPECTED[patch]["parent"], "--patch", patch,
                "--log-dir", str(logs), "--json"]  # fmt: skip

    processes = [
        subprocess.Popen(
            argv(patch), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for patch in PATCHES
    ]
    outputs = [process.communicate(timeout=900) for process in processes]
    decisions = []
    for patch, process, (stdout, stderr) in zip(PATCHES, processes, outputs, strict=True):
        expected = EXPECTED[patch]
        assert (process.returncode, stderr) == (EXIT[expected["decision"]], ""), patch
        decision = json.loads(stdout)
        assert decision["decision"] == expected["decision"]
        assert {r["prop"]: r["reason"] for r in decision["results"]} == expected["results"]
        decisions.append(decision)
    return decisions


def test_eight_concurrent_scores_all_give_their_verdicts(
    example_repo: Path, tmp_path: Path, scorer_env: dict[str, str]
) -> None:
    env = {**scorer_env, "XDG_STATE_HOME": str(tmp_path / "state")}  # no clone yet: they race
    logs = tmp_path / "logs"
    decisions = _score_all(("patchwarden", "score"), example_repo, logs, env)
    verdicts = {decision["verdict_id"]: decision for decision in decisions}
    assert len(verdicts) == PROCESSES  # eight distinct verdict ids
    lines = (logs / "verdicts.jsonl").read_text().splitlines()
    index = [json.loads(line) for line in lines]
    assert sorted(e["verdict_id"] for e in index) == sorted(verdicts)
    for entry in index:
        decision = verdicts[entry["verdict_id"]]
        assert entry["decision"] == decision["decision"]
        assert entry["patch_sha"] == decision["patch_sha"]
        bundle = Path(entry["bundle"])
        assert {p.name for p in bundle.iterdir()} == BUNDLE_FILES
        assert json.loads((bundle / "decision.json").read_text()) == decision
        runs = bundle / "runs"
        assert sorted(p.name for p in runs.iterdir()) == expected_run_files(runs)
        # The four lines of the contract's gate and the extra seed's.
        assert len((bundle / "review-note.txt").read_text().splitlines()) == 5
    assert [p.name for p in (logs / "verdicts").iterdir() if p.name.startswith(".")] == []

    scorer_state = tmp_path / "state" / "patchwarden" / "scorer"
    [clone] = [p for p in (scorer_state / "clones").iterdir() if p.is_dir()]
    assert git.Repo(clone).git.worktree("list").count("\n") == 0  # the bare clone alone
    assert [p.name for p in scorer_state.iterdir() if p.name.startswith("checkout-")] == []


def test_eight_concurrent_warm_scores_start_one_scorer_and_all_give_their_verdicts(
    example_repo: Path, tmp_path: Path, scorer_env: dict[str, str]
) -> None:
    """The same eight with ``--warm`` on a state directory with no warm scorer: they race to
    start it, and under its lock exactly one starts; it answers all eight."""
    state = tmp_path / "state"
    env = {**scorer_env, "XDG_STATE_HOME": str(state)}
    logs = tmp_path / "logs"
    ids = {decision["verdict_id"] for decision in _score_all(WARM_SCORE, example_repo, logs, env)}
    index = [json.loads(line) for line in (logs / "verdicts.jsonl").read_text().splitlines()]
    assert sorted(e["verdict_id"] for e in index) == sorted(ids) and len(ids) == PROCESSES
    [log] = (state / "patchwarden" / "scorer" / "warm").glob("*.log")
    started = re.findall(r"warm scorer (\d+): listening", log.read_text())
    assert len(started) == 1
    os.kill(int(started[0]), signal.SIGTERM)
