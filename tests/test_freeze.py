"""Freeze records (docs/design/contract-layers.md): ``freeze check`` by field, ``freeze propose``
by step.

Everything runs for real: git repositories built here (HEAD is the patch,
HEAD^ its parent), the sandboxed collection and test runs under bubblewrap.
The flaky tests claim run numbers from a counter directory mounted writable
into the sandbox, so "fails on the first run, passes on the second" is
deterministic; an empty counter proves that no test process ever started.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import git
import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchwarden.sandbox import SandboxConfig
from patchwarden.sandbox import blob_id_at as blob_at
from patchwarden.scorer import (
    FreezeProposal,
    FreezeRecord,
    ScorerConfig,
    propose_freeze,
    propose_freeze_record,
)
from patchwarden.scorer._hashing import sha256_file
from patchwarden.scorer.layers._freeze import RunEvidence, check_disagreement
from tests._git_repos import (
    COUNTER_SOURCE,
    GIT_ENV,
    PYPROJECT,
    commit,
    contract_yaml,
    counter_dir,
    init_repo,
    manifest_for,
    operator_config,
    patchwarden,
    reset_counter,
    write_files,
)

pytestmark = pytest.mark.bwrap

FIXTURE = "tests/fixtures/data.json"
ORACLE = "tests/properties/test_oracle.py"
STRICT = "tests/properties/test_strict.py"
ADDED = "tests/properties/test_added.py"
SUITE = "tests/test_suite.py"
FLAKY = f"{SUITE}::test_flaky"
SUITE_SOURCE = """\
import pytest

from counter import run_index


def test_flaky():
    assert run_index() % 2 == 1, "fails on the first run, passes on the second"


def test_stable():
    assert True


def test_always_fails():
    assert False


@pytest.mark.parametrize("case", ["a", "b"])
def test_param(case):
    if case == "a":
        assert run_index() % 2 == 1
"""
ORACLE_SOURCE = """\
import json
from pathlib import Path

FIXTURE = Path(__file__).parents[1] / "fixtures" / "data.json"


def test_sane():
    assert sum(json.loads(FIXTURE.read_text())["values"]) == 6
"""


@dataclass
class World:
    repo: Path
    """HEAD = the patch (changes app.py, adds a property file), HEAD^ = base."""
    check_repo: Path
    """A clone of ``repo`` for ``freeze check`` (its own .freeze/)."""
    diff_repo: Path
    """A clone whose patch changes the oracle."""
    shallow_repo: Path
    """A depth-1 clone: no HEAD^."""
    base: str
    counter: Path
    config: Path
    env: dict[str, str]
    scorer: ScorerConfig
    sandbox: SandboxConfig


def _clone(source: Path, dest: Path, *extra: str) -> git.Repo:
    subprocess.run(
        ["git", "clone", "--quiet", *extra, f"file://{source}", str(dest)],
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    repo = git.Repo(dest)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Review Tests")
        config.set_value("user", "email", "review-tests@patchwarden.invalid")
        config.set_value("core", "hooksPath", os.devnull)
    return repo


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("freeze")
    counter = counter_dir(root / "counter")
    path = root / "repo"
    repo = init_repo(path)
    write_files(
        path,
        {
            "pyproject.toml": PYPROJECT,
            "counter.py": COUNTER_SOURCE.format(counter=str(counter)),
            "app.py": "VALUE = 1\n",
            "contract/differential-contract.yaml": contract_yaml(
                [11], {"prop.sane": f"{ORACLE}::test_sane"}
            ),
            FIXTURE: '{"values": [1, 2, 3]}\n',
            ORACLE: ORACLE_SOURCE,
            STRICT: ORACLE_SOURCE.replace("== 6", "== 7"),
            SUITE: SUITE_SOURCE,
            "tests/test_empty.py": "# no tests here\n",
        },
    )
    write_files(
        path, {"tests/fixtures/manifest.json": manifest_for(path, {FIXTURE: ["prop.sane"]})}
    )
    base = commit(repo, {}, "base")
    commit(repo, {"app.py": "VALUE = 2\n", ADDED: "def test_added():\n    pass\n"}, "the patch")
    check_repo = root / "check"
    _clone(path, check_repo)
    diff_repo = root / "diff"
    diff = _clone(path, diff_repo)
    diff.git.checkout("--quiet", "--detach", base)
    commit(diff, {ORACLE: ORACLE_SOURCE + "# the patch touches the oracle\n"}, "oracle edit")
    shallow_repo = root / "shallow"
    _clone(path, shallow_repo, "--depth", "1")
    state, logs = root / "state", root / "logs"
    return World(
        repo=path,
        check_repo=check_repo,
        diff_repo=diff_repo,
        shallow_repo=shallow_repo,
        base=base,
        counter=counter,
        config=operator_config(root / "config.yaml", state=state, logs=logs, writable=(counter,)),
        env={**os.environ, "XDG_STATE_HOME": str(root / "xdg")},
        scorer=ScorerConfig(state_dir=str(state), log_dir=str(logs)),
        sandbox=SandboxConfig(writable_paths=(str(counter),)),
    )


# -- freeze check: one test per reject row of the table -------------------------------------

COPY = ".freeze/check/data.json"
ONE = "; exactly one is required"


def _good_record(world: World, repo: Path) -> dict[str, object]:
    copy = repo / COPY
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(repo / FIXTURE, copy)
    return {
        "test_id": FLAKY,
        "fixture_path": COPY,
        "fixture_sha256": sha256_file(copy),
        "disagreement": [{"passed": False, "exit_code": 1}, {"passed": True, "exit_code": 0}],
        "oracle_path": ORACLE,
        "oracle_blob": blob_at(repo, world.base, ORACLE),
        "notes": {"why": "a shared counter makes it flaky"},
    }


def _check(world: World, repo: Path, record: dict[str, object], tmp_path: Path) -> tuple[int, str]:
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    proc = patchwarden(
        "freeze",
        "check",
        "--repo",
        str(repo),
        "--record",
        str(path),
        "--config",
        str(world.config),
        env=world.env,
    )
    assert proc.stderr == ""
    return proc.returncode, proc.stdout


def test_check_passes_when_all_six_fields_hold(world: World, tmp_path: Path) -> None:
    assert _check(world, world.check_repo, _good_record(world, world.check_repo), tmp_path) == (
        0,
        "ok: every field of the freeze record holds\n",
    )


@pytest.mark.parametrize(
    ("test_id", "line"),
    [
        (
            "tests/test_empty.py",
            "test_id: collects 0 tests (pytest exit code 5); exactly one is required",
        ),
        (
            f"{SUITE}::test_nope",
            "test_id: collects 0 tests (pytest exit code 4); exactly one is required",
        ),
        (
            f"{SUITE}::test_param",
            "test_id: collects 2 tests (pytest exit code 0); exactly one is required",
        ),
    ],
)
def test_check_rejects_a_test_id_that_collects_zero_or_several(
    world: World, tmp_path: Path, test_id: str, line: str
) -> None:
    record = {**_good_record(world, world.check_repo), "test_id": test_id}
    assert _check(world, world.check_repo, record, tmp_path) == (1, line + "\n")


def test_check_rejects_a_missing_fixture_path(world: World, tmp_path: Path) -> None:
    record = {**_good_record(world, world.check_repo), "fixture_path": ".freeze/check/gone.json"}
    code, out = _check(world, world.check_repo, record, tmp_path)
    assert code == 1
    assert out.splitlines() == [
        "fixture_path: does not exist: .freeze/check/gone.json",
        "fixture_sha256: cannot be checked: the fixture does not exist",
    ]


def test_check_rejects_a_digest_that_changed(world: World, tmp_path: Path) -> None:
    record = _good_record(world, world.check_repo)
    (world.check_repo / COPY).write_text('{"values": [1, 2, 4]}\n')
    now = sha256_file(world.check_repo / COPY)
    code, out = _check(world, world.check_repo, record, tmp_path)
    assert (code, out) == (
        1,
        f"fixture_sha256: digest changed: recorded {record['fixture_sha256']}, now {now}\n",
    )


def test_check_rejects_runs_that_agree(world: World, tmp_path: Path) -> None:
    runs = [{"passed": True, "exit_code": 0}, {"passed": True, "exit_code": 0}]
    record = {**_good_record(world, world.check_repo), "disagreement": runs}
    assert _check(world, world.check_repo, record, tmp_path) == (
        1,
        "disagreement: both runs passed (exit codes 0, 0): no disagreement\n",
    )


@pytest.mark.parametrize(
    ("runs", "why"),
    [
        (
            [{"passed": False, "exit_code": 1}, {"passed": False, "exit_code": 2}],
            "both runs failed (exit codes 1, 2): no disagreement",
        ),
        (
            [{"passed": True, "exit_code": 1}, {"passed": False, "exit_code": 1}],
            "run 1 says passed=true but its exit code is 1",
        ),
        (
            [{"passed": False, "exit_code": 5}, {"passed": True, "exit_code": 0}],
            "run 1 exit code 5 is a selection error (no test collected), not a flake",
        ),
        ([{"passed": False, "exit_code": 1}], "must hold exactly two run objects"),
        (
            [{"passed": "no", "exit_code": 1}, {"passed": True, "exit_code": 0}],
            "run 1 has no boolean 'passed'",
        ),
        (
            [{"passed": False, "exit_code": True}, {"passed": True, "exit_code": 0}],
            "run 1 has no integer 'exit_code'",
        ),
        ([{"passed": False, "exit_code": 1}, {"passed": True, "exit_code": 0}], ""),
    ],
)
def test_disagreement_rules(runs: list[dict[str, object]], why: str) -> None:
    assert check_disagreement(runs) == why


def test_check_rejects_an_exit_5_run_as_a_selection_error(world: World, tmp_path: Path) -> None:
    runs = [{"passed": False, "exit_code": 5}, {"passed": True, "exit_code": 0}]
    record = {**_good_record(world, world.check_repo), "disagreement": runs}
    code, out = _check(world, world.check_repo, record, tmp_path)
    assert (code, out) == (
        1,
        "disagreement: run 1 exit code 5 is a selection error (no test collected), not a flake\n",
    )


def test_check_rejects_an_oracle_missing_at_head_parent(world: World, tmp_path: Path) -> None:
    record = {**_good_record(world, world.check_repo), "oracle_path": ADDED}
    code, out = _check(world, world.check_repo, record, tmp_path)
    assert code == 1
    assert out.splitlines() == [
        f"oracle_path: missing at HEAD^: {ADDED}",
        "oracle_blob: cannot be checked: the path is missing at HEAD^",
    ]


def test_check_rejects_a_blob_that_differs(world: World, tmp_path: Path) -> None:
    record = {**_good_record(world, world.check_repo), "oracle_blob": "0" * 40}
    real = blob_at(world.check_repo, world.base, ORACLE)
    assert _check(world, world.check_repo, record, tmp_path) == (
        1,
        f"oracle_blob: differs from HEAD^: recorded {'0' * 40}, HEAD^ has {real}\n",
    )


def test_check_rejects_an_oracle_the_patch_changes(world: World, tmp_path: Path) -> None:
    record = _good_record(world, world.diff_repo)  # oracle_blob is HEAD^'s: only the diff fails
    assert _check(world, world.diff_repo, record, tmp_path) == (
        1,
        f"oracle_blob: {ORACLE} is in the patch's diff (git diff --name-only HEAD^ HEAD)\n",
    )


def test_check_fails_closed_in_a_shallow_clone(world: World, tmp_path: Path) -> None:
    record = {**_good_record(world, world.shallow_repo), "oracle_blob": "1" * 40}
    code, out = _check(world, world.shallow_repo, record, tmp_path)
    assert code == 1
    assert out.splitlines() == [
        "oracle_path: HEAD^ is not available (root commit or shallow clone); failing closed",
        "oracle_blob: cannot be checked without HEAD^",
    ]


def test_notes_never_fill_a_missing_field(world: World, tmp_path: Path) -> None:
    record = _good_record(world, world.check_repo)
    blob = record.pop("oracle_blob")
    record["notes"] = {"oracle_blob": blob}
    assert _check(world, world.check_repo, record, tmp_path) == (
        1,
        "oracle_blob: missing (notes never fill a gap)\n",
    )


def test_check_input_errors_are_one_line_exit_2(world: World, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"test_id":\n')
    cases = [
        (["--record", str(bad)], f"{bad}:2: not valid JSON"),
        (["--record", str(tmp_path / "none.json")], "freeze record not found"),
        ([], "freeze record not found"),  # default .freeze/record.json, none in this clone
    ]
    for extra, message in cases:
        proc = patchwarden(
            "freeze",
            "check",
            "--repo",
            str(world.check_repo),
            *extra,
            "--config",
            str(world.config),
            env=world.env,
        )
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr.startswith("patchwarden: error: ") and message in proc.stderr
        assert len(proc.stderr.splitlines()) == 1


# -- freeze propose: each step's stop condition, and an accepted proposal --------------------


@pytest.fixture
def fresh(world: World) -> World:
    """An empty counter and no .freeze/ left by an earlier test."""
    reset_counter(world.counter)
    for repo in (world.repo, world.diff_repo, world.shallow_repo):
        shutil.rmtree(repo / ".freeze", ignore_errors=True)
    return world


def _propose(
    world: World,
    test_id: str = FLAKY,
    *,
    repo: Path | None = None,
    fixture: str = FIXTURE,
    oracle: str = ORACLE,
) -> FreezeProposal:
    return propose_freeze(repo or world.repo, test_id, fixture, oracle, world.scorer, world.sandbox)


def _nothing_left(repo: Path) -> None:
    """A rejected proposal adds no record and leaves no copy behind."""
    freeze = repo / ".freeze"
    assert not freeze.exists() or not any(p.is_file() for p in freeze.rglob("*"))


def test_propose_accepts_a_flake_and_the_record_checks(fresh: World) -> None:
    proc = patchwarden(
        "freeze",
        "propose",
        "--repo",
        str(fresh.repo),
        "--test-id",
        FLAKY,
        "--fixture",
        FIXTURE,
        "--oracle",
        ORACLE,
        "--reason",
        "shared counter",
        "--config",
        str(fresh.config),
        env=fresh.env,
    )
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout
    lines = proc.stdout.splitlines()
    assert [line.split(" ", 2)[:2] for line in lines[:5]] == [["step", str(n)] for n in range(1, 6)]
    assert lines[1] == "step 2 runs: failed (exit 1), passed (exit 0)"
    record_path = fresh.repo / ".freeze" / "record.json"
    assert lines[5] == f"proposed_for_review: {record_path}"
    record = json.loads(record_path.read_text())
    assert record["test_id"] == FLAKY
    assert record["fixture_path"] == f".freeze/{FIXTURE}"
    assert record["fixture_sha256"] == sha256_file(fresh.repo / FIXTURE)
    assert record["disagreement"] == [
        {"passed": False, "exit_code": 1},
        {"passed": True, "exit_code": 0},
    ]
    assert record["oracle_path"] == ORACLE
    assert record["oracle_blob"] == blob_at(fresh.repo, fresh.base, ORACLE)
    assert record["notes"]["reason"] == "shared counter"
    check = patchwarden(
        "freeze", "check", "--repo", str(fresh.repo), "--config", str(fresh.config), env=fresh.env
    )
    assert (check.returncode, check.stdout) == (0, "ok: every field of the freeze record holds\n")
    again = patchwarden(
        "freeze",
        "propose",
        "--repo",
        str(fresh.repo),
        "--test-id",
        FLAKY,
        "--fixture",
        FIXTURE,
        "--oracle",
        ORACLE,
        "--config",
        str(fresh.config),
        env=fresh.env,
    )
    assert again.returncode == 2 and "a freeze record already exists" in again.stderr


def test_step1_stops_on_a_fixture_not_in_head_before_any_test_runs(fresh: World) -> None:
    proposal = _propose(fresh, fixture="tests/fixtures/none.json")
    assert (proposal.status, proposal.step) == ("rejected", 1)
    assert proposal.reason == "fixture_path: tests/fixtures/none.json is not a file in HEAD"
    assert list(fresh.counter.iterdir()) == []
    _nothing_left(fresh.repo)


def test_step1_refuses_to_write_through_a_planted_symlink(fresh: World, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (fresh.repo / ".freeze").mkdir()
    (fresh.repo / ".freeze" / "tests").symlink_to(elsewhere)
    proposal = _propose(fresh)
    assert (proposal.status, proposal.step) == ("rejected", 1)
    assert "is a symlink; refusing to write through it" in proposal.reason
    assert list(elsewhere.iterdir()) == [] and list(fresh.counter.iterdir()) == []


def test_step1_stops_when_the_copy_does_not_hash_like_the_fixture(
    fresh: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy that changes between write and re-hash cannot be caused for real on a sane
    filesystem: here the writer is made to corrupt it (the one fake in this file)."""
    import patchwarden.scorer.layers._freeze_propose as procedure

    real = procedure._write_copy
    monkeypatch.setattr(procedure, "_write_copy", lambda ctx, data: real(ctx, data + b" "))
    proposal = _propose(fresh)
    assert (proposal.status, proposal.step) == ("rejected", 1)
    assert proposal.reason.startswith("fixture_sha256: the copy hashes ")
    assert list(fresh.counter.iterdir()) == []
    _nothing_left(fresh.repo)


@pytest.mark.parametrize(
    ("test_id", "reason"),
    [
        (f"{SUITE}::test_stable", "disagreement: both runs passed (exit codes 0, 0): no flake"),
        (
            f"{SUITE}::test_always_fails",
            "disagreement: both runs failed (exit codes 1, 1): no flake",
        ),
        (
            "tests/test_empty.py",
            "disagreement: run 1 exit code 5 is a selection error (no test collected), not a flake",
        ),
    ],
)
def test_step2_stops_without_a_real_disagreement(fresh: World, test_id: str, reason: str) -> None:
    proposal = _propose(fresh, test_id)
    assert (proposal.status, proposal.step, proposal.reason) == ("rejected", 2, reason)
    assert len(proposal.steps) == 1  # step 1 only; nothing after the reject ran
    _nothing_left(fresh.repo)


def test_step3_stops_on_an_oracle_missing_at_head_parent(fresh: World) -> None:
    proposal = _propose(fresh, oracle=ADDED)
    assert (proposal.status, proposal.step) == ("rejected", 3)
    assert proposal.reason == f"oracle_path: missing at HEAD^: {ADDED}"
    _nothing_left(fresh.repo)


def test_step3_stops_when_the_patch_changes_the_oracle(fresh: World) -> None:
    proposal = _propose(fresh, repo=fresh.diff_repo)
    assert (proposal.status, proposal.step) == ("rejected", 3)
    assert proposal.reason == (
        f"oracle_blob: {ORACLE} is in the patch's diff (git diff --name-only HEAD^ HEAD)"
    )
    _nothing_left(fresh.diff_repo)


def test_step3_fails_closed_without_head_parent(fresh: World) -> None:
    proposal = _propose(fresh, repo=fresh.shallow_repo)
    assert (proposal.status, proposal.step) == ("rejected", 3)
    assert proposal.reason.startswith("oracle_path: HEAD^ is not available")
    _nothing_left(fresh.shallow_repo)


def test_step4_stops_when_the_parents_property_fails_on_the_fixture(fresh: World) -> None:
    proposal = _propose(fresh, oracle=STRICT)
    assert (proposal.status, proposal.step) == ("rejected", 4)
    assert proposal.reason == (
        f"oracle_path: {STRICT} fails on HEAD^ against the frozen fixture "
        "(seed 11: exit code 1, 1 failing)"
    )
    assert len(proposal.steps) == 3
    _nothing_left(fresh.repo)


def test_step5_stops_when_the_record_does_not_hold(fresh: World) -> None:
    """A parametrized test's bare id: its runs disagree (one case is flaky), the oracle
    holds, but it collects two tests, so the check of step 5 refuses the record."""
    proposal = _propose(fresh, f"{SUITE}::test_param")
    assert (proposal.status, proposal.step) == ("rejected", 5)
    assert proposal.reason == (
        "test_id: collects 2 tests (pytest exit code 0); exactly one is required"
    )
    assert len(proposal.steps) == 4
    _nothing_left(fresh.repo)


# -- the scorer's side of request_freeze -----------------------------------------------------


def test_propose_freeze_record_writes_to_the_log_dir_never_the_tree(fresh: World) -> None:
    head = git.Repo(fresh.repo).head.commit.hexsha
    proposal = propose_freeze_record(
        fresh.repo, head, FLAKY, fresh.scorer, fresh.sandbox, reason="shared counter"
    )
    assert proposal.status == "proposed_for_review", proposal.reason
    assert set(proposal.summary()) == {"status", "reason"}
    record = Path(proposal.record)
    assert record.is_relative_to(Path(fresh.scorer.log_dir) / "freeze")
    data = json.loads(record.read_text())
    assert (data["fixture_path"], data["oracle_path"]) == (f".freeze/{FIXTURE}", ORACLE)
    outcome = json.loads((record.parents[1] / "proposal.json").read_text())
    assert (outcome["status"], outcome["patch_sha"], outcome["agent_reason"]) == (
        "proposed_for_review",
        head,
        "shared counter",
    )
    assert not (fresh.repo / ".freeze").exists()  # the agent's tree is never written


def test_propose_freeze_record_rejects_with_a_reason(fresh: World) -> None:
    head = git.Repo(fresh.repo).head.commit.hexsha
    proposal = propose_freeze_record(fresh.repo, head, "-p evil", fresh.scorer, fresh.sandbox)
    assert (proposal.status, proposal.step) == ("rejected", 0)
    assert "not an option" in proposal.reason
    stable = propose_freeze_record(
        fresh.repo, head, f"{SUITE}::test_stable", fresh.scorer, fresh.sandbox
    )
    assert stable.summary() == {
        "status": "rejected",
        "reason": "disagreement: both runs passed (exit codes 0, 0): no flake",
    }


def test_check_refuses_an_option_as_test_id(world: World, tmp_path: Path) -> None:
    record = {**_good_record(world, world.check_repo), "test_id": "-pno:python"}
    assert _check(world, world.check_repo, record, tmp_path) == (
        1,
        "test_id: must be a pytest node id, not an option\n",
    )


@given(
    st.builds(
        FreezeRecord,
        test_id=st.text(min_size=1, max_size=40),
        fixture_path=st.text(max_size=40),
        fixture_sha256=st.text(max_size=64),
        disagreement=st.lists(
            st.builds(RunEvidence, passed=st.booleans(), exit_code=st.integers(-5, 255)),
            max_size=2,
        ),
        oracle_path=st.text(max_size=40),
        oracle_blob=st.text(max_size=40),
        notes=st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=2),
    )
)
def test_freeze_record_round_trips(record: FreezeRecord) -> None:
    assert FreezeRecord.model_validate_json(record.model_dump_json()) == record
