"""``task from-fix`` and ``contract check --reference`` on a real-shaped git repository.

The repository is shaped like the pathspec trial of docs/design/tasks.md: a fix that
changes what a reversed bracket range means, and rewrites the project's test that asserted
the old behaviour. Real git, bubblewrap and pytest, through the console script; the task's
validation scores with the real scorer.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import git
import pytest

from patchwarden.scorer import TestResult, read_testpaths
from patchwarden.scorer._contract import property_id
from patchwarden.scorer._task import candidate_tests, is_test_path, oracle_text, roots_of_tests
from tests._git_repos import GIT_ENV, commit, init_repo, operator_config, patchwarden

PYPROJECT = '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n'
OLD = '''\
import re


def bracket(spec):
    """The character class of ``spec`` ("a-z"): a compiled pattern."""
    return re.compile(f"[{spec}]")
'''
NEW = '''\
import re

NEVER = re.compile(r"(?!)")


def bracket(spec):
    """The character class of ``spec`` ("a-z"): a compiled pattern; a reversed range
    ("z-a") matches nothing, as git's wildmatch treats it."""
    try:
        return re.compile(f"[{spec}]")
    except re.error:
        return NEVER
'''
TESTS_OLD = """\
import re

import pytest

from globber import bracket


def test_simple_range():
    assert bracket("a-c").match("b")


def test_digits():
    assert bracket("0-9").match("7")
    assert not bracket("0-9").match("x")


def test_reversed_range_raises():
    with pytest.raises(re.error):
        bracket("z-a")
"""
TESTS_NEW = """\
import re

import pytest

from globber import bracket


def test_simple_range():
    assert bracket("a-c").match("b")


def test_digits():
    assert bracket("0-9").match("7")
    assert not bracket("0-9").match("x")


@pytest.mark.parametrize("spec", ["z-a", "9-0"])
def test_reversed_range_matches_nothing(spec):
    \"\"\"A reversed range is a pattern that
    matches no character.\"\"\"
    assert bracket(spec).match("m") is None
"""
EXTRA_TESTS = """\
from globber import bracket


def test_reversed_digits():
    assert bracket("9-0").match("5") is None
"""
WEAKENED = TESTS_NEW.replace('assert bracket(spec).match("m") is None', "assert True")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("task")
    repo = init_repo(root / "repo")
    commit(
        repo,
        {
            "pyproject.toml": PYPROJECT,
            "globber.py": OLD,
            "tests/test_globber.py": TESTS_OLD,
            "README.md": "globber\n",
        },
        "globber 1.0",
    )
    repo.create_tag("v1")
    commit(
        repo,
        {"globber.py": NEW, "tests/test_globber.py": TESTS_NEW},
        "ignore invalid bracket ranges",
    )
    repo.create_tag("fix")
    repo.git.checkout("--quiet", "v1")
    config = operator_config(root / "config.yaml", state=root / "state", logs=root / "logs")
    env = {**os.environ, "XDG_STATE_HOME": str(root / "xdg")}
    return {"root": root, "repo": root / "repo", "git": repo, "config": config, "env": env}


def _run(project: dict[str, object], *args: str) -> subprocess.CompletedProcess[str]:
    return patchwarden(*args, "--config", str(project["config"]), env=project["env"])  # type: ignore[arg-type]


def test_test_layout_splits_tests_from_product() -> None:
    roots = ["checks"]
    protected = ["tests/**", "**/conftest.py", "tox.ini"]
    assert is_test_path("tests/data/sample.txt", roots, protected)
    assert is_test_path("src/pkg/tests/data/case.json", roots, protected)
    assert is_test_path("checks/golden.txt", roots, protected)
    assert is_test_path("pkg/test_util.py", roots, protected)
    assert is_test_path("pkg/util_test.py", roots, protected)
    assert is_test_path("pkg/conftest.py", roots, protected)
    assert is_test_path("tox.ini", roots, protected)
    assert not is_test_path("pkg/util.py", roots, protected)
    assert not is_test_path("checkstyle.py", roots, protected)
    assert not is_test_path("docs/testing.md", roots, protected)


def test_testpaths_read_like_pytest(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    sha = commit(
        repo,
        {
            "setup.cfg": "[tool:pytest]\ntestpaths = checks\n  more\n",
            "tox.ini": "[tox]\nenvlist = py3\n",
        },
        "cfg",
    )
    assert read_testpaths(tmp_path / "r", sha) == ["checks", "more"]
    sha = commit(repo, {"pytest.ini": "[pytest]\naddopts = -q\n"}, "ini wins, without testpaths")
    assert read_testpaths(tmp_path / "r", sha) == []


def test_a_package_in_testpaths_is_the_products(tmp_path: Path) -> None:
    # wcwidth lists its package in testpaths for --doctest-modules: its fix of
    # wcwidth/textwrap.py was read as a test change ("changes only the project's tests").
    repo = init_repo(tmp_path / "r")
    sha = commit(
        repo,
        {
            "tox.ini": "[pytest]\ntestpaths = tests pkg checks\n",
            "pkg/__init__.py": "",
            "pkg/wrap.py": "def wrap(): pass\n",
            "checks/golden.txt": "x\n",
        },
        "package in testpaths",
    )
    testpaths = read_testpaths(tmp_path / "r", sha)
    assert testpaths == ["tests", "pkg", "checks"]
    roots = roots_of_tests(tmp_path / "r", sha, testpaths)
    assert roots == ["tests", "checks"]
    protected = ["tox.ini"]
    assert not is_test_path("pkg/wrap.py", roots, protected)
    assert not is_test_path("pkg/table.json", roots, protected)
    assert is_test_path("pkg/test_wrap.py", roots, protected)
    assert is_test_path("pkg/tests/data.json", roots, protected)
    assert is_test_path("checks/golden.txt", roots, protected)


def test_outcomes_classify_targets_guards_and_exclusions() -> None:
    assert TestResult("t", ("fail",) * 3, ("pass",) * 3).kind == "target"
    assert TestResult("t", ("pass",) * 3, ("pass",) * 3).kind == "guard"
    split = TestResult("t", ("fail", "pass", "fail"), ("pass",) * 3)
    assert split.kind == "excluded"
    assert split.why_excluded() == "split outcomes across seeds on the base"
    assert split.outcomes() == "base fail/pass/fail; reference pass/pass/pass"
    broken = TestResult("t", ("pass",) * 3, ("fail",) * 3)
    assert (broken.kind, broken.why_excluded()) == (
        "excluded",
        "passes on the base, fails on the reference",
    )
    both = TestResult("t", ("fail",) * 3, ("fail",) * 3)
    assert both.why_excluded() == "fails on the base and the reference"
    skipped = TestResult("t", ("skip",) * 3, ("skip",) * 3)
    assert skipped.why_excluded() == "skipped"
    fallback = TestResult(
        "t", ("fail",) * 3, ("pass",) * 3, fallback="in-process: the property sets m.X"
    )
    assert (fallback.kind, fallback.why_excluded()) == (
        "excluded",
        "runs in-process: the property sets m.X (scorer.isolation: pass keeps such tests)",
    )


@pytest.mark.bwrap
def test_task_from_a_fix_that_rewrites_the_test_of_the_old_behaviour(
    project: dict[str, object],
) -> None:
    done = _run(
        project,
        "task",
        "from-fix",
        "--repo",
        str(project["repo"]),
        "--fix",
        "fix",
        "--name",
        "brackets",
        "--json",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    task = json.loads(done.stdout)
    assert task["name"] == "brackets"
    # Test by test, as pytest counts them: each parametrized case is a target of its own.
    assert [t["test"] for t in task["targets"]] == [
        "tests/test_globber.py::test_reversed_range_matches_nothing[z-a]",
        "tests/test_globber.py::test_reversed_range_matches_nothing[9-0]",
    ]
    assert [t["id"] for t in task["targets"]] == [
        "target.reversed_range_matches_nothing_z_a",
        "target.reversed_range_matches_nothing_9_0",
    ]
    assert [g["id"] for g in task["guards"]] == ["guard.simple_range", "guard.digits"]
    assert task["excluded"] == []
    assert task["validation"] == {"reference": "accept", "empty": "reject"}
    repo: git.Repo = project["git"]  # type: ignore[assignment]
    base = repo.commit("refs/heads/patchwarden/tasks/brackets/base")
    reference = repo.commit("refs/heads/patchwarden/tasks/brackets/reference")
    assert (base.hexsha, reference.hexsha) == (task["base"], task["reference"])
    assert reference.parents == (base,)
    assert base.parents[0].hexsha == repo.commit("v1").hexsha
    # The base holds the fix's tests and the contract, not its product change.
    assert (base.tree / "tests/test_globber.py").data_stream.read().decode() == TESTS_NEW
    assert (base.tree / "globber.py").data_stream.read().decode() == OLD
    assert (reference.tree / "globber.py").data_stream.read().decode() == NEW
    contract = (base.tree / "contract/differential-contract.yaml").data_stream.read().decode()
    assert 'spec_paths:\n  - "tests/test_globber.py"\n' in contract
    # The agent reads the contract and the base's history: neither leads to the fix.
    fix = repo.commit("fix")
    for text in (contract, base.message):
        assert fix.hexsha[:7] not in text and "brackets" not in text and fix.message not in text
    assert contract.splitlines()[0] == "# Written by `patchwarden task from-fix`."
    # Each property's oracle says what its test checks: its name and docstring.
    assert (
        '  - id: "target.reversed_range_matches_nothing_z_a"\n'
        '    oracle: "reversed range matches nothing [z-a]: A reversed range is a pattern that '
        'matches no character."\n'
    ) in contract
    assert '  - id: "guard.simple_range"\n    oracle: "simple range"\n' in contract
    # The user's branches and checkout are untouched.
    assert repo.head.commit.hexsha == repo.commit("v1").hexsha
    assert {h.name for h in repo.heads} >= {"main"}
    assert repo.commit("main").hexsha == repo.commit("fix").hexsha

    # An agent's patch that weakens the target instead of fixing the code is rejected.
    repo.git.checkout("--quiet", "--detach", task["base"])
    commit(repo, {"tests/test_globber.py": WEAKENED}, "weaken the test")
    repo.create_tag("weakened")
    repo.git.checkout("--quiet", "v1")
    stray = Path(str(project["repo"])) / "contract" / "differential-contract.yaml"
    stray.parent.mkdir()
    stray.write_text("seeds: [1]\n")  # an operator's draft in the working tree, not committed
    scored = _run(
        project,
        "score",
        "--repo",
        str(project["repo"]),
        "--parent",
        "patchwarden/tasks/brackets/base",
        "--patch",
        "weakened",
        "--contract",
        "contract/differential-contract.yaml",
        "--json",
    )
    stray.unlink()
    stray.parent.rmdir()
    assert scored.returncode == 1, scored.stdout + scored.stderr
    assert scored.stderr == (
        "patchwarden: note: contract/differential-contract.yaml in the working tree differs "
        f"from the one committed at {task['base'][:12]}; this uses the committed one (commit "
        "the change to use it)\n"
    )
    verdict = json.loads(scored.stdout)
    assert verdict["decision"] == "reject"
    outcomes = {c["check"]: c["outcome"] for c in verdict["scorecard"]}
    assert outcomes["contract_tampered"] == "reject"

    # An honest agent's fix that adds a test module of its own: an accept, the added tests a
    # note on the scorecard (they are restored away before the runs all the same).
    repo.git.checkout("--quiet", "--detach", task["base"])
    commit(
        repo,
        {"globber.py": NEW, "tests/test_extra.py": EXTRA_TESTS},
        "fix, with a test of my own",
    )
    repo.create_tag("honest-with-tests")
    repo.git.checkout("--quiet", "v1")
    honest = _run(
        project,
        "score",
        "--repo",
        str(project["repo"]),
        "--parent",
        "patchwarden/tasks/brackets/base",
        "--patch",
        "honest-with-tests",
        "--contract",
        "contract/differential-contract.yaml",
        "--json",
    )
    assert honest.returncode == 0, honest.stdout + honest.stderr
    card = {c["check"]: c for c in json.loads(honest.stdout)["scorecard"]}
    assert card["test_tampering"] == {
        "check": "test_tampering",
        "outcome": "note",
        "evidence": ["A tests/test_extra.py (adds tests only: test_reversed_digits)"],
    }


@pytest.mark.bwrap
def test_bad_input_is_one_line_exit_2(project: dict[str, object]) -> None:
    repo: git.Repo = project["git"]  # type: ignore[assignment]
    repo.git.checkout("--quiet", "--detach", "v1")
    commit(repo, {"README.md": "globber, documented\n"}, "docs only")
    docs = repo.head.commit.hexsha
    repo.create_tag("docs")
    repo.git.checkout("--quiet", "v1")
    cases = {
        docs: f"{docs} changes no test file: give --test NODEID or write a property first",
        "no-such-ref": "unknown revision 'no-such-ref'",
    }
    repo.git.checkout("--quiet", "-b", "side", "v1")
    commit(repo, {"NOTES.md": "notes\n"}, "notes")
    repo.git.checkout("--quiet", "main")
    with repo.git.custom_environment(**GIT_ENV):
        repo.git.merge("--quiet", "--no-ff", "-m", "merge notes", "side")
    repo.create_tag("merged")
    cases["merged"] = "merged is a merge commit (2 parents): give --parent REF"
    for ref, message in cases.items():
        done = _run(project, "task", "from-fix", "--repo", str(project["repo"]), "--fix", ref)
        assert done.returncode == 2, done.stdout + done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert message in done.stderr
    # The fix named by the checkout, with the working tree changed: not the fix one sees.
    repo.git.checkout("--quiet", "fix")
    (Path(str(project["repo"])) / "globber.py").write_text(OLD)
    try:
        done = _run(project, "task", "from-fix", "--repo", str(project["repo"]), "--fix", "HEAD")
    finally:
        repo.git.checkout("--quiet", "--", "globber.py")
        repo.git.checkout("--quiet", "v1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "HEAD is the checked-out commit and the working tree has uncommitted changes "
        "(M globber.py, ...): commit the fix first"
    ) in done.stderr


def test_the_report_names_targets_counts_guards_and_lists_exclusions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from patchwarden.scorer import Property, Task, Validation
    from patchwarden.server.cli._task import _report

    guards = [Property(id=f"guard.g{i}", test=f"tests/t.py::test_g{i}") for i in range(7)]
    task = Task(
        name="brackets",
        repo=Path("/src/globber"),
        fix="f" * 40,
        parent="p" * 40,
        base="b" * 40,
        reference="r" * 40,
        contract="contract/differential-contract.yaml",
        seeds=(11, 29, 47),
        test_changes=["tests/t.py"],
        product_changes=["globber.py"],
        properties=[Property(id="target.t", test="tests/t.py::test_t"), *guards],
        results=[TestResult("tests/t.py::test_flaky", ("fail", "pass", "fail"), ("pass",) * 3)],
        validation=[
            Validation("reference", "accept", "v-ref", ok=True, why=""),
            Validation("empty", "accept", "v-empty", ok=False, why="differential accept"),
        ],
    )
    _report(task)
    out = capsys.readouterr().out
    assert "targets: 1\n  target.t  tests/t.py::test_t\n" in out
    assert "guards: 7 (guard.g0, guard.g1, guard.g2, guard.g3, guard.g4, +2 more)\n" in out
    assert (
        "excluded: 1\n  tests/t.py::test_flaky: split outcomes across seeds on the base "
        "(base fail/pass/fail; reference pass/pass/pass)\n"
    ) in out
    assert "validation, reference: accept (verdict v-ref) ok\n" in out
    assert "validation, empty patch: accept (verdict v-empty) not a reject: differential" in out
    assert out.endswith(
        "not validated: the empty patch got accept (verdict v-empty), not a reject: "
        "differential accept\n"
    )
    assert not task.validated


def test_the_validated_hint_names_the_config_the_task_was_built_with(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from patchwarden.scorer import Property, Task, Validation
    from patchwarden.server.cli._task import _report

    task = Task(
        name="brackets",
        repo=Path("/src/globber"),
        fix="f" * 40,
        parent="p" * 40,
        base="b" * 40,
        reference="r" * 40,
        contract="contract/differential-contract.yaml",
        seeds=(11,),
        test_changes=["tests/t.py"],
        product_changes=["globber.py"],
        properties=[Property(id="target.t", test="tests/t.py::test_t")],
        results=[],
        validation=[
            Validation("reference", "accept", "v-ref", ok=True, why=""),
            Validation("empty", "reject", "v-empty", ok=True, why=""),
        ],
    )
    _report(task, Path("ops/patchwarden.yaml"))
    assert capsys.readouterr().out.splitlines()[-1] == (
        "validated. score a patch with `patchwarden score --repo /src/globber --parent "
        "refs/heads/patchwarden/tasks/brackets/base --patch PATCH --contract "
        "contract/differential-contract.yaml --config ops/patchwarden.yaml`"
    )


def test_a_property_oracle_says_what_its_test_checks() -> None:
    assert oracle_text("t.py::test_reversed_range") == "reversed range"
    assert oracle_text("t.py::test_range[z-a]", "Empty.") == "range [z-a]: Empty."
    assert oracle_text("t.py::TestParseDate::test_iso_week", "Weeks count from Monday.") == (
        "parse date: iso week: Weeks count from Monday."
    )


PROPERTY = """\
from globber import bracket


def test_reversed_range_is_a_null_pattern():
    assert bracket("z-a").match("m") is None
"""


@pytest.mark.bwrap
def test_check_against_a_reference_names_the_guard_that_asserts_the_bug(
    project: dict[str, object],
) -> None:
    """The pathspec trial of docs/design/tasks.md: `--guards-for` takes the project's test
    that asserts the old behaviour as a guard; on the base it passes like the others, and
    only the known-good fix shows it can never be a both_pass."""
    repo: git.Repo = project["git"]  # type: ignore[assignment]
    root = str(project["repo"])
    repo.git.checkout("--quiet", "-b", "hand", "v1")
    try:
        commit(repo, {"tests/properties/test_reversed.py": PROPERTY}, "the operator's property")
        init = patchwarden(
            "contract", "init", "--repo", root, "--guards-for", "bracket",
            "--test", "tests/properties/test_reversed.py::test_reversed_range_is_a_null_pattern",
        )  # fmt: skip
        assert init.returncode == 0, init.stderr
        assert (
            "warning: a guard that asserts the bug (a test the fix must change) makes every "
            "honest fix a regression reject: check the guards against a known-good fix with "
            "`contract check --reference REF`"
        ) in init.stdout
        commit(repo, {}, "the contract")
        repo.create_tag("hand-base")
        commit(repo, {"globber.py": NEW, "tests/test_globber.py": TESTS_NEW}, "the real fix")
        repo.create_tag("hand-fix")
        repo.git.checkout("--quiet", "hand-base")
        # The working copy's contract differs from the committed one: one line says so.
        contract_file = Path(root) / "contract/differential-contract.yaml"
        committed = contract_file.read_text()
        contract_file.write_text(committed + "# an edit not committed\n")
        check = _run(
            project, "contract", "check", "--repo", root, "--base", "hand-base",
            "--reference", "hand-fix",
        )  # fmt: skip
        contract_file.write_text(committed)
    finally:
        repo.git.checkout("--quiet", "v1")
    short = repo.commit("hand-fix").hexsha[:12]
    assert check.returncode == 1, check.stdout + check.stderr
    assert check.stdout.splitlines()[0] == (
        "note: contract/differential-contract.yaml in the working tree differs from the one "
        f"committed at {repo.commit('hand-base').hexsha[:12]}; this uses the committed one "
        "(commit the change to use it)"
    )
    rows = {line.split()[0]: line.split()[1:] for line in check.stdout.splitlines() if line}
    assert rows["guard.reversed_range_raises"][:3] == ["pass", "pass", "pass"]
    assert rows["guard.reversed_range_raises"][3] == "fail:"
    assert rows["prop.reversed_range_is_a_null_pattern"][-1] == "pass"
    assert rows["guard.simple_range"] == ["pass"] * 4
    assert check.stdout.splitlines()[-1] == (
        f"check failed: guard.reversed_range_raises fails on the reference {short}: it "
        "asserts behaviour the fix changes"
    )


LOOP_OLD = """\
def total_down(n):
    \"\"\"n + (n - 1) + ... + 1.\"\"\"
    total = 0
    while n != 0:
        total += n
        n -= 1
    return total
"""
LOOP_NEW = LOOP_OLD.replace("    total = 0\n", "    total = 0\n    n = max(n, total)\n")
LOOP_TESTS = """\
import os
from unittest import mock

import loop


def test_negative_is_zero():
    assert loop.total_down(-1) == 0


def test_three():
    assert loop.total_down(3) == 6


def test_patched():
    with mock.patch.dict(os.environ, {"LOOP_STEP": "2"}):
        assert loop.total_down(2) == 3


def test_zero():
    assert loop.total_down(0) == 0
"""


@pytest.mark.bwrap
def test_a_test_that_hangs_on_the_base_is_a_target_and_one_that_falls_back_is_excluded(
    tmp_path: Path,
) -> None:
    # The bug loops forever on the base: that test ends at the call deadline (3 s here) and
    # the tests after it run with a new product process. A test that patches os.environ as a dict
    # cannot run isolated: in the contract it would hold every verdict for review.
    repo = init_repo(tmp_path / "repo")
    commit(repo, {"pyproject.toml": PYPROJECT, "loop.py": LOOP_OLD}, "loop 1.0")
    commit(repo, {"loop.py": LOOP_NEW, "tests/test_loop.py": LOOP_TESTS}, "stop below zero")
    repo.create_tag("fix")
    config = operator_config(tmp_path / "config.yaml", state=tmp_path / "s", logs=tmp_path / "l")
    config.write_text(
        config.read_text() + "  run_limits:\n    call_timeout_s: 3\n", encoding="utf-8"
    )
    done = patchwarden(
        "task", "from-fix", "--repo", str(tmp_path / "repo"), "--fix", "fix",
        "--name", "loop", "--config", str(config), "--json",
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    task = json.loads(done.stdout)
    assert [t["test"] for t in task["targets"]] == ["tests/test_loop.py::test_negative_is_zero"]
    assert [g["test"] for g in task["guards"]] == [
        "tests/test_loop.py::test_three",
        "tests/test_loop.py::test_zero",
    ]
    (excluded,) = task["excluded"]
    assert excluded["test"] == "tests/test_loop.py::test_patched"
    assert excluded["why"] == (
        "runs in-process: the property patches os.environ, which the product process "
        "does not share (scorer.isolation: pass keeps such tests)"
    )
    assert task["validation"] == {"reference": "accept", "empty": "reject"}


FLOOR_OLD = "def floor0(n):\n    return n\n"
FLOOR_NEW = "def floor0(n):\n    return max(n, 0)\n"
HIDDEN_TESTS = """\
import os
from unittest import mock

import loop


def test_patched_negative():
    with mock.patch.dict(os.environ, {"LOOP_STEP": "1"}):
        assert loop.floor0(-1) == 0


def test_mocked(mocker):
    assert loop.floor0(2) == 2
"""


@pytest.mark.bwrap
def test_a_task_without_target_names_what_excluded_the_tests_that_show_the_bug(
    tmp_path: Path,
) -> None:
    # The one test that fails on the base and passes on the reference patches os.environ as a dict
    # (it falls back, excluded); another needs a plugin's fixture the run does not have; a
    # third module does not import. None of them is "the fix's tests do not show the bug".
    repo = init_repo(tmp_path / "repo")
    commit(repo, {"pyproject.toml": PYPROJECT, "loop.py": FLOOR_OLD}, "loop 1.0")
    commit(
        repo,
        {
            "loop.py": FLOOR_NEW,
            "tests/test_loop.py": HIDDEN_TESTS,
            "tests/test_broken.py": "from loop import nope\n\n\ndef test_nope():\n    pass\n",
        },
        "stop below zero",
    )
    repo.create_tag("fix")
    config = operator_config(tmp_path / "config.yaml", state=tmp_path / "s", logs=tmp_path / "l")
    config.write_text(
        config.read_text() + "  run_limits:\n    call_timeout_s: 3\n", encoding="utf-8"
    )
    kept = tmp_path / "runs"
    done = patchwarden(
        "task", "from-fix", "--repo", str(tmp_path / "repo"), "--fix", "fix",
        "--name", "hidden", "--config", str(config), "--keep-runs", str(kept),
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[3:] == [
        "targets: 0",
        "guards: 0",
        "excluded: 2",
        "  tests/test_loop.py::test_patched_negative: runs in-process: the property patches "
        "os.environ, which the product process does not share "
        "(scorer.isolation: pass keeps such tests) (base "
        "fail/fail/fail; reference pass/pass/pass; first failure "
        "AssertionError|tests/test_loop.py:9)",
        "  tests/test_loop.py::test_mocked: not run on the base and the reference: its setup "
        "failed: FixtureLookupError: fixture 'mocker' not found (tests/test_loop.py:12) (base "
        "fail/fail/fail; reference fail/fail/fail; first failure "
        "FixtureLookupError|setup:?)",
        "not collected on the base: tests/test_broken.py: ImportError: cannot import name "
        "'nope' from 'loop' (/workspace/loop.py) (tests/test_broken.py:1)",
        "not validated: no target: 1 test(s) fail on the base and pass on the reference on "
        "every seed but were excluded: tests/test_loop.py::test_patched_negative: runs "
        "in-process: the property patches os.environ, which the product process does not "
        "share (scorer.isolation: pass keeps such tests)",
    ]
    # The build's own runs, for a person: each tried test's record per side and seed.
    assert sorted(p.name for p in kept.iterdir() if p.suffix == ".json") == [
        f"{side}-seed{seed}.json" for side in ("base", "reference") for seed in (11, 29, 47)
    ]
    evidence = json.loads((kept / "base-seed11.json").read_text())
    assert [(r["test"], r["status"], r["cause"]) for r in evidence["records"]] == [
        ("tests/test_loop.py::test_patched_negative", "fail", ""),
        (
            "tests/test_loop.py::test_mocked",
            "fail",
            "its setup failed: FixtureLookupError: fixture 'mocker' not found "
            "(tests/test_loop.py:12)",
        ),
    ]

    # contract check names the same causes: the fixture, and the module that did not collect.
    contract = (
        "contract_version: 1\nseeds: [11]\nspec_paths: [tests]\nproperties:\n"
        "  - id: prop.mocked\n    oracle: floor0 of a positive number is itself\n"
        "    test: tests/test_loop.py::test_mocked\n"
    )
    commit(repo, {"contract/differential-contract.yaml": contract}, "a contract")
    check = patchwarden(
        "contract", "check", "--repo", str(tmp_path / "repo"), "--base", "HEAD",
        "--config", str(config), env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")},
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert (
        "not run: prop.mocked: its setup failed: FixtureLookupError: fixture 'mocker' not "
        "found (tests/test_loop.py:12)"
    ) in check.stdout.splitlines()


def test_a_task_tries_each_parametrized_case_but_those_a_set_orders() -> None:
    """Test by test as pytest counts them: boltons' fix of ``namedtuple`` mends the
    ``[namedtuple]`` case of a test parametrized over ``namedtuple`` and ``namedlist``, and
    the function as one test failed on the reference. Cases named by their place in a set
    stay one test (the hash seed of each run orders them)."""
    nodes = [
        "t/test_n.py::test_empty[namedtuple]",
        "t/test_n.py::test_empty[namedlist]",
        "t/test_n.py::test_year[1985-expected0]",
        "t/test_n.py::test_year[1986-expected1]",
        "t/test_n.py::TestX::test_plain",
    ]
    assert candidate_tests(nodes, ["t/test_n.py::test_year"]) == [
        "t/test_n.py::test_empty[namedtuple]",
        "t/test_n.py::test_empty[namedlist]",
        "t/test_n.py::test_year",
        "t/test_n.py::TestX::test_plain",
    ]
    assert property_id("t/test_n.py::test_empty[namedtuple]", 0, "target") == (
        "target.empty_namedtuple"
    )
    assert property_id("t/test_n.py::TestX::test_plain", 4, "guard") == "guard.TestX_plain"
