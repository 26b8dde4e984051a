"""``patchwarden sweep``: flaky tests quarantined, a broken base reported and remembered.

Real git, real sandboxed pytest processes. The flaky test claims a run
number from a counter directory mounted writable into every sandbox and
fails on even numbers, so over three runs (in any order, in parallel) it
fails exactly twice: flaky, deterministically.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import git
import pytest

from patchwarden.sandbox import AgentRun, ProcessResult, TestOutcome
from patchwarden.scorer import ScorerConfig, base_is_broken, load_contract
from patchwarden.scorer.layers._sweep import tally_runs
from tests._git_repos import (
    COUNTER_SOURCE,
    PYPROJECT,
    commit,
    contract_yaml,
    counter_dir,
    init_repo,
    manifest_for,
    operator_config,
    patchwarden,
    write_files,
)

pytestmark = pytest.mark.bwrap

CONTRACT = "contract/differential-contract.yaml"
SUITE = "tests/test_suite.py"
ORACLE = "tests/properties/test_oracle.py"
SUITE_SOURCE = """\
from counter import run_index


def test_stable():
    assert 1 + 1 == 2


def test_flaky():
    assert run_index() % 2 == 1, "fails on every other run"


def test_broken():
    assert False, "broken on the base"
"""
FIXED_SUITE = SUITE_SOURCE.replace('assert False, "broken on the base"', "assert True")
ORACLE_SOURCE = """\
import json
from pathlib import Path


def test_sane():
    data = json.loads((Path(__file__).parents[1] / "fixtures" / "data.json").read_text())
    assert sum(data["values"]) == 6


def test_task():
    assert False, "the bug an agent is to fix: fails on the base by design"
"""


@dataclass
class Swept:
    repo: Path
    config: Path
    env: dict[str, str]
    state: Path
    first_sha: str
    first: subprocess.CompletedProcess[str]
    first_list: dict[str, object]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Swept:
    root = tmp_path_factory.mktemp("sweep")
    counter = counter_dir(root / "counter")
    repo_path = root / "repo"
    repo = init_repo(repo_path)
    files = {
        "pyproject.toml": PYPROJECT,
        "counter.py": COUNTER_SOURCE.format(counter=str(counter)),
        CONTRACT: contract_yaml(
            [11], {"prop.sane": f"{ORACLE}::test_sane", "prop.task": f"{ORACLE}::test_task"}
        ),
        "tests/fixtures/data.json": '{"values": [1, 2, 3]}\n',
        ORACLE: ORACLE_SOURCE,
        SUITE: SUITE_SOURCE,
    }
    write_files(repo_path, files)
    write_files(
        repo_path,
        {
            "tests/fixtures/manifest.json": manifest_for(
                repo_path, {"tests/fixtures/data.json": ["prop.sane"]}
            )
        },
    )
    sha = commit(repo, {}, "base with a flaky and a broken test")
    state = root / "state"
    config = operator_config(
        root / "config.yaml", state=state, logs=root / "logs", writable=(counter,)
    )
    env = {**os.environ, "XDG_STATE_HOME": str(root / "xdg")}
    first = patchwarden(
        "sweep",
        "--repo",
        str(repo_path),
        "--base",
        "main",
        "--runs",
        "3",
        "--config",
        str(config),
        env=env,
    )
    listed = json.loads((repo_path / "contract" / "quarantine.json").read_text())
    return Swept(repo_path, config, env, state, sha, first, listed)


def test_broken_base_exits_1_and_names_the_test(swept: Swept) -> None:
    proc = swept.first
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert f"broken: {SUITE}::test_broken failed 3 of 3 runs" in out
    assert f"flaky (quarantined): {SUITE}::test_flaky failed 2 of 3 runs" in out
    assert "base broken: serve refuses this base" in out
    assert sum(line.startswith("run ") for line in out.splitlines()) == 3
    assert proc.stderr == ""


def test_the_contract_properties_are_left_out_and_said_so(swept: Swept) -> None:
    """Failing on the base is what a property is for: not swept, never a broken base."""
    out = swept.first.stdout
    assert (
        "left out: 2 contract properties (the task: they may fail on the base; not swept, "
        f"never a broken base): {ORACLE}::test_sane, {ORACLE}::test_task"
    ) in out
    assert "test_task" not in json.dumps(swept.first_list)
    assert "test_task" not in out.replace(f"{ORACLE}::test_task", "")


def test_quarantine_list_has_counts_since_and_broken(swept: Swept) -> None:
    listed = swept.first_list
    assert listed["base"] == swept.first_sha
    assert listed["runs"] == 3
    tests = listed["tests"]
    assert isinstance(tests, list) and len(tests) == 1
    assert tests[0]["test_id"] == f"{SUITE}::test_flaky"
    assert (tests[0]["failures"], tests[0]["runs"]) == (2, 3)
    assert tests[0]["since"].endswith("Z")
    assert listed["broken"] == [{"test_id": f"{SUITE}::test_broken", "failures": 3, "runs": 3}]
    assert listed["incomplete_runs"] == []


def test_clean_tests_are_not_quarantined(swept: Swept) -> None:
    ids = {t["test_id"] for t in swept.first_list["tests"]}  # type: ignore[union-attr]
    assert f"{SUITE}::test_stable" not in ids
    assert f"{ORACLE}::test_sane" not in ids


def _scorer_config(swept: Swept) -> ScorerConfig:
    return ScorerConfig(state_dir=str(swept.state), log_dir=str(swept.repo.parent / "logs"))


def test_base_is_broken_remembers_the_sweep(swept: Swept) -> None:
    assert base_is_broken(swept.repo, swept.first_sha, _scorer_config(swept)) == [
        f"{SUITE}::test_broken"
    ]


def test_a_committed_list_keeps_the_base_refused_and_a_fix_clears_it(swept: Swept) -> None:
    repo = git.Repo(swept.repo)
    # The operator commits the list the sweep wrote: no sweep of this commit yet,
    # but the committed list says the suite is broken.
    listed_sha = commit(repo, {}, "quarantine list from the sweep")
    contract = load_contract(swept.repo / CONTRACT)
    config = _scorer_config(swept)
    assert base_is_broken(swept.repo, listed_sha, config, contract=contract) == [
        f"{SUITE}::test_broken"
    ]
    assert base_is_broken(swept.repo, listed_sha, config) == []  # nothing known without it
    fixed_sha = commit(repo, {SUITE: FIXED_SUITE}, "fix the broken test")
    proc = patchwarden(
        "sweep",
        "--repo",
        str(swept.repo),
        "--base",
        fixed_sha,
        "--runs",
        "3",
        "--config",
        str(swept.config),
        env=swept.env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "broken:" not in proc.stdout
    listed = json.loads((swept.repo / "contract" / "quarantine.json").read_text())
    assert listed["base"] == fixed_sha
    assert listed["broken"] == []
    flaky = [t for t in listed["tests"] if t["test_id"] == f"{SUITE}::test_flaky"]
    # Still quarantined, and since the first sweep: only a release check lets it go.
    assert flaky and flaky[0]["since"] == swept.first_list["tests"][0]["since"]  # type: ignore[index]
    assert base_is_broken(swept.repo, fixed_sha, config, contract=contract) == []


def test_usage_errors_are_one_line(swept: Swept, tmp_path: Path) -> None:
    cases = [
        (["--runs", "1"], "Invalid value for '--runs'"),
        (["--contract", "contract/none.yaml"], "contract not found in commit"),
        (["--base", "no-such-ref"], "unknown revision 'no-such-ref'"),
    ]
    for extra, message in cases:
        args = ["sweep", "--repo", str(swept.repo), "--base", "main", *extra]
        proc = patchwarden(*args, "--config", str(swept.config), env=swept.env)
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == ""
        assert len(proc.stderr.splitlines()) == 1 and message in proc.stderr
        assert proc.stderr.startswith("patchwarden: error: ")
    proc = patchwarden("sweep", "--repo", str(tmp_path), "--base", "main", env=swept.env)
    assert (proc.returncode, len(proc.stderr.splitlines())) == (2, 1)
    assert "not a git repository" in proc.stderr


def _run(
    outcomes: list[tuple[str, str]], *, exit_code: int | None = 1, complete: bool = True
) -> AgentRun:
    process = ProcessResult(
        argv=("python",),
        exit_code=exit_code,
        signal=None,
        stdout="",
        stderr="",
        truncated=False,
        timed_out=exit_code is None,
        idle_timed_out=False,
        cancelled=False,
        duration_s=0.1,
        backend="bubblewrap",
    )
    return AgentRun(
        outcomes=[TestOutcome(n, o, 0.0, "") for n, o in outcomes],
        complete=complete,
        process=process,
    )


def test_a_test_missing_from_a_run_counts_as_failing_and_the_run_as_incomplete() -> None:
    """The tally on run records (data, not a fake): a crash is never a pass."""
    runs = [
        _run([("t::a", "passed"), ("t::b", "passed")], exit_code=0),
        _run([("t::a", "passed")], exit_code=None, complete=False),  # killed after t::a
        _run([("t::a", "passed"), ("t::b", "error")]),
    ]
    tallies, incomplete = tally_runs(runs)
    assert [(t.test_id, t.failures, t.runs) for t in tallies] == [("t::a", 0, 3), ("t::b", 2, 3)]
    assert incomplete == ["run 2: killed at the wall-clock limit"]
    crashed = tally_runs([_run([], exit_code=2)])[1]
    assert crashed == ["run 1: pytest exit code 2 (collection error or crash)"]


def test_the_tally_leaves_the_properties_out() -> None:
    runs = [_run([("t::a", "failed"), ("p::prop", "failed"), ("p::prop[1]", "failed")])] * 2
    tallies, _ = tally_runs(runs, left_out=["p::prop"])
    assert [(t.test_id, t.failures) for t in tallies] == [("t::a", 2)]
