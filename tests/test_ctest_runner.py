"""The ctest runner through ``score`` on real CMake builds of examples/paths
(docs/design/runners.md).

One example repository per module, scored in this process: each tree is configured and built
once (the runner caches a build per tree content), so the parent's build serves every test.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from patchwarden.sandbox import SandboxConfig
from patchwarden.scorer import ScorerConfig, ScoreRequest, score
from tests.conftest import CONTRACT, ROOT

PATHS = ROOT / "examples" / "paths"
PROPS = ("prop.no_backslash", "prop.idempotent", "prop.separators_converge", "prop.fixture_cases")


def _make_paths_repo(dest: Path) -> None:
    spec = importlib.util.spec_from_file_location("paths_make_repo", PATHS / "make_repo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_repo(dest)


def _commit_on_base(repo: Path, tag: str, path: str, text: str) -> None:
    """One more patch commit on ``base`` that rewrites ``path`` (an attack the example's
    own patches do not show)."""
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run([*git, "checkout", "-q", "--detach", "base"], check=True)
    (repo / path).write_text(text, encoding="utf-8")
    subprocess.run([*git, "commit", "-q", "-am", tag], check=True)
    subprocess.run([*git, "tag", tag], check=True)
    subprocess.run([*git, "checkout", "-q", "main"], check=True)


@pytest.fixture(scope="module")
def paths_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("paths") / "paths"
    _make_paths_repo(repo)
    root = (repo / "CMakeLists.txt").read_text(encoding="utf-8")
    # The tests defined away: the root CMake file no longer adds tests/.
    _commit_on_base(
        repo, "patch-drop-tests", "CMakeLists.txt", root.replace("add_subdirectory(tests)", "")
    )
    # The seed pinned from outside the contract paths: the root CMake file wraps every test
    # command in `env PATCHWARDEN_SEED=3` (a "cross-compiling emulator"), a seed where the
    # base passes. Without the definitions check this is an accept that fixes nothing.
    wrapped = "set(CMAKE_CROSSCOMPILING_EMULATOR env PATCHWARDEN_SEED=3)\nenable_testing()"
    _commit_on_base(
        repo, "patch-pin-seed", "CMakeLists.txt", root.replace("enable_testing()", wrapped)
    )
    return repo


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> tuple[ScorerConfig, SandboxConfig]:
    where = tmp_path_factory.mktemp("ctest-score")
    scorer = ScorerConfig(state_dir=str(where / "state"), log_dir=str(where / "logs"))
    return scorer, SandboxConfig()


def _score(repo: Path, patch: str, configs: tuple[ScorerConfig, SandboxConfig]) -> dict:
    request = ScoreRequest(repo=repo, contract=CONTRACT, parent="base", patch=f"patch-{patch}")
    verdict = score(request, *configs)
    out = verdict.to_json()
    out["rows"] = [
        json.loads(line)
        for line in (verdict.bundle / "patch.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    out["checks"] = {c.check: c.outcome for c in verdict.scorecard}
    out["evidence"] = {c.check: c.evidence for c in verdict.scorecard}
    return out


def _reasons(verdict: dict) -> dict[str, str]:
    return {r["prop"]: r["reason"] for r in verdict["results"]}


def test_the_fix_is_accepted(paths_repo: Path, configs: tuple[ScorerConfig, SandboxConfig]) -> None:
    verdict = _score(paths_repo, "fix", configs)
    assert verdict["decision"] == "accept"
    assert _reasons(verdict) == {
        "prop.no_backslash": "parent_fail_cleared",
        "prop.idempotent": "both_pass",
        "prop.separators_converge": "parent_fail_cleared",
        "prop.fixture_cases": "both_pass",
    }
    # Four properties on the three contract seeds and on the one secret extra seed.
    assert {r["status"] for r in verdict["rows"]} == {"pass"} and len(verdict["rows"]) == 16
    assert len({r["seed"] for r in verdict["rows"]} - {3, 8, 12}) == 1
    # The trust level is named (scorer.runner_trust, default review), never silent.
    assert verdict["checks"]["runner_trust"] == "review"
    assert verdict["evidence"]["runner_trust"][0].startswith("runner ctest: compiled-in: ")


def test_a_regression_is_rejected_with_its_assertion(
    paths_repo: Path, configs: tuple[ScorerConfig, SandboxConfig]
) -> None:
    verdict = _score(paths_repo, "regression", configs)
    assert verdict["decision"] == "reject"
    assert _reasons(verdict)["prop.idempotent"] == "regression"
    fails = [r for r in verdict["rows"] if r["status"] == "fail"]
    assert [(r["prop"], r["seed"], r["witness"]) for r in fails if r["seed"] in (3, 8, 12)] == [
        ("prop.idempotent", 12, "prop.idempotent|assert|tests/idempotent.cpp:9")
    ]
    # The secret extra seed draws its own inputs: whatever it finds is the same regression.
    assert {(r["prop"], r["witness"]) for r in fails} == {
        ("prop.idempotent", "prop.idempotent|assert|tests/idempotent.cpp:9")
    }


def test_the_unfixed_refactor_is_a_freeze_proposal(
    paths_repo: Path, configs: tuple[ScorerConfig, SandboxConfig]
) -> None:
    verdict = _score(paths_repo, "refactor", configs)
    assert verdict["decision"] == "propose_freeze"
    assert _reasons(verdict)["prop.no_backslash"] == "shared_variant_fail"


def test_a_build_failure_fails_every_property(
    paths_repo: Path, configs: tuple[ScorerConfig, SandboxConfig]
) -> None:
    verdict = _score(paths_repo, "build-failure", configs)
    assert verdict["decision"] == "reject"
    assert {r["witness"] for r in verdict["rows"]} == {"build|src/normalize_path.cpp:11"}
    assert {r["status"] for r in verdict["rows"]} == {"fail"} and len(verdict["rows"]) == 16


def test_tests_defined_away_are_missing_seeds(
    paths_repo: Path, configs: tuple[ScorerConfig, SandboxConfig]
) -> None:
    verdict = _score(paths_repo, "drop-tests", configs)
    assert verdict["decision"] == "reject"
    assert set(_reasons(verdict).values()) == {"missing_seed"}
    assert verdict["rows"] == []


def test_a_tampered_test_source_is_contract_tampered(
    paths_repo: Path, configs: tuple[ScorerConfig, SandboxConfig]
) -> None:
    verdict = _score(paths_repo, "tamper", configs)
    assert verdict["decision"] == "reject"
    assert verdict["checks"]["contract_tampered"] == "reject"
    assert verdict["evidence"]["contract_tampered"] == ["M tests/no_backslash.cpp"]


def test_a_seed_pinned_outside_the_contract_paths_is_caught(
    paths_repo: Path, configs: tuple[ScorerConfig, SandboxConfig]
) -> None:
    verdict = _score(paths_repo, "pin-seed", configs)
    assert verdict["decision"] == "reject"
    assert verdict["checks"]["shadowing"] == "reject"
    assert any(
        "ctest definition of prop.no_backslash differ" in line
        for line in verdict["evidence"]["shadowing"]
    )


IDENTITY = (
    '#include "normalize_path.hpp"\n\n'
    "std::string normalize_path(const std::string& path) { return path; }\n"
)


def test_the_agents_run_tests_builds_and_leads_with_the_failed_assertion(
    paths_repo: Path, tmp_path: Path
) -> None:
    from tests._tool_sessions import FakeScorer, example_session
    from tests.test_server_tools import Call, Progress

    with example_session(paths_repo, tmp_path / "state", FakeScorer()) as session:
        call = Call(session, FakeScorer(), Progress())
        (session.workspace.tree / "src" / "normalize_path.cpp").write_text(IDENTITY)
        result = call("run_tests")
        failed = {t.node_id: t.failure_text for t in result.tests if t.outcome == "failed"}
        # clock_skew is the example's flaky test: either outcome.
        assert set(failed) - {"clock_skew"} == {
            "no_backslash",
            "separators_converge",
            "fixture_cases",
        }
        assert failed["no_backslash"].splitlines()[0] == "tests/no_backslash.cpp:9"
        (session.workspace.tree / "src" / "normalize_path.cpp").write_text(IDENTITY[:-3])
        broken = call("run_tests")
        assert [(t.node_id, t.outcome) for t in broken.tests] == [("build", "error")]
        assert broken.tests[0].failure_text.startswith("src/normalize_path.cpp:3")
        assert call.refused("run_python", code="print(1)") == (
            "run_python: this project's tests run with ctest, not Python; use run_tests"
        )


def test_the_sweep_quarantines_the_flaky_ctest_test(
    paths_repo: Path, tmp_path: Path, configs: tuple[ScorerConfig, SandboxConfig]
) -> None:
    from patchwarden.scorer import sweep

    repo = tmp_path / "paths"
    subprocess.run(["git", "clone", "-q", str(paths_repo), str(repo)], check=True)
    # clock_skew fails on half the runs (the clock's parity): twelve runs all alike happen
    # once in 2048 sweeps; three runs (the default) catch it three times in four.
    result = sweep(repo, "base", *configs, runs=12)
    assert [(t.test_id, 0 < t.failures < 12) for t in result.flaky] == [("clock_skew", True)]
    assert result.broken == [] and result.incomplete_runs == []
    assert result.properties_left_out == [
        "no_backslash",
        "idempotent",
        "separators_converge",
        "fixture_cases",
    ]
    written = json.loads((repo / "contract" / "quarantine.json").read_text(encoding="utf-8"))
    assert [t["test_id"] for t in written["tests"]] == ["clock_skew"]


def test_a_freeze_record_names_a_ctest_test(
    paths_repo: Path, configs: tuple[ScorerConfig, SandboxConfig]
) -> None:
    from patchwarden.scorer.layers._freeze import check_freeze_record

    head = subprocess.run(
        ["git", "-C", str(paths_repo), "rev-parse", "base"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    def test_id_line(test_id: str) -> list[str]:
        rejects = check_freeze_record(
            {"test_id": test_id},
            repo=paths_repo,
            head=head,
            fixture_root=paths_repo,
            config=configs[0],
            sandbox_config=configs[1],
            runner="ctest",
        )
        return [r.line() for r in rejects if r.field == "test_id"]

    assert test_id_line("clock_skew") == []
    assert test_id_line("clock") == [
        f"test_id: names 0 ctest tests of {head[:12]}; exactly one is required"
    ]


@pytest.mark.parametrize(
    ("test_id", "step", "reason"),
    [
        # A test that passes both times is no flake: rejected after its two ctest runs.
        (
            "no_backslash",
            2,
            "disagreement: both runs passed (exit codes 0, 0): no flake",
        ),
        (
            "no_such_test",
            2,
            "disagreement: ctest ran no test named no_such_test (a selection error)",
        ),
    ],
)
def test_freeze_propose_runs_the_ctest_test_twice(
    paths_repo: Path,
    tmp_path: Path,
    configs: tuple[ScorerConfig, SandboxConfig],
    test_id: str,
    step: int,
    reason: str,
) -> None:
    from patchwarden.scorer.layers._freeze_propose import propose_freeze

    proposal = propose_freeze(
        paths_repo,
        test_id,
        "tests/fixtures/cases.txt",
        "tests/fixture_cases.cpp",
        *configs,
        head="patch-fix",
        out_root=tmp_path,
    )
    assert (proposal.status, proposal.step, proposal.reason) == ("rejected", step, reason)
    assert proposal.steps[0].startswith("step 1 fixture: tests/fixtures/cases.txt copied to ")
    assert not (tmp_path / ".freeze").exists() or not any((tmp_path / ".freeze").rglob("*.txt"))


def test_contract_check_says_what_it_runs_and_the_trust_level(
    paths_repo: Path, configs: tuple[ScorerConfig, SandboxConfig]
) -> None:
    from patchwarden.scorer import check_contract

    result = check_contract(paths_repo, "base", CONTRACT, *configs)
    assert result.runner_line().startswith(
        "runner: ctest: per tree: cmake configure and build in the sandbox (cached by content), "
        "then ctest --output-junit per seed with the seed in PATCHWARDEN_SEED; trust: compiled-in"
    )
    assert [(c.prop, c.cases, c.problem) for c in result.ids] == [(p, 1, "") for p in PROPS]
    assert [r.witness for r in result.runs[12].records if r.status == "fail"] == [
        "prop.no_backslash|assert|tests/no_backslash.cpp:9",
        "prop.separators_converge|assert|tests/separators_converge.cpp:9",
    ]


def test_contract_init_on_a_cmake_project_lists_its_ctest_tests(tmp_path: Path) -> None:
    import shutil
    import sys

    from patchwarden.scorer import parse_contract

    repo = tmp_path / "project"
    shutil.copytree(PATHS / "template", repo)
    (repo / "contract" / "differential-contract.yaml").unlink()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    done = subprocess.run(
        [sys.executable, "-m", "patchwarden", "contract", "init", "--repo", str(repo)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = repo / CONTRACT
    contract = parse_contract(written.read_text(encoding="utf-8"), str(written))
    assert contract.runner == "ctest" and contract.seed_env == "PATCHWARDEN_SEED"
    assert contract.spec_paths == ["tests"]
    assert [p.test for p in contract.properties] == [
        "no_backslash",
        "idempotent",
        "separators_converge",
        "fixture_cases",
        "clock_skew",
    ]
