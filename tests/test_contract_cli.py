"""``contract check`` and ``contract init``; serve refuses a contract whose test ids do not
exist. Real git repositories, bubblewrap and pytest, through the console script."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from patchwarden.sandbox import ImportLayout, ProcessResult, PropertyRecord, PropertyRun
from patchwarden.scorer import (
    ContractCheck,
    TestIdCheck,
    contract_skeleton,
    match_test_id,
    parse_contract,
)
from tests._git_repos import commit, init_repo, operator_config, patchwarden
from tests._terminal import run_on_terminal
from tests.conftest import CONTRACT

MODULE = "def double(n):\n    return n * 2 if n < 5 else n * 2 + 1  # the bug\n"
PROPERTY = """\
from hypothesis import given, strategies as st

from mathlib import double


@given(st.integers(min_value=0, max_value=9))
def test_double_is_even(n):
    assert double(n) % 2 == 0


def test_always_true():
    assert double(1) == 2
"""
NODE = "tests/properties/test_double.py::test_double_is_even"
TYPO = "tests/properties/test_double.py::test_double_is_evn"


YEARS_FILE = "tests/properties/test_years.py"
YEARS = """\
import datetime

import pytest

CASES = {("1985", datetime.date(1985, 1, 1)), ("1986", datetime.date(1986, 1, 1))}


@pytest.mark.parametrize("text,expected", CASES)
def test_year(text, expected):
    assert datetime.date(int(text), 1, 1) == expected
"""
BY_PLACE = f"{YEARS_FILE}::test_year[1985-expected0]"
"""isodate's test_parse: whether 1985's case is expected0 or expected1 depends on the hash
seed that ordered the set."""


def _contract(test: str) -> str:
    return (
        "contract_version: 1\n"
        "seeds: [11, 29]\n"
        "spec_paths: [tests/properties]\n"
        "properties:\n"
        "  - id: prop.always_true\n"
        '    test: "tests/properties/test_double.py::test_always_true"\n'
        "  - id: prop.double_is_even\n"
        '    oracle: "double(n) is even"\n'
        f'    test: "{test}"\n'
    )


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A flat project with a bug, a good contract (tag good) and a misspelt one (tag typo)."""
    root = tmp_path_factory.mktemp("contractcli")
    repo = init_repo(root / "repo")
    commit(
        repo,
        {
            "mathlib.py": MODULE,
            "tests/properties/test_double.py": PROPERTY,
            CONTRACT: _contract(NODE),
        },
        "a bug and its property",
    )
    repo.create_tag("good")
    commit(repo, {CONTRACT: _contract(TYPO)}, "a typo in the contract")
    repo.create_tag("typo")
    commit(repo, {YEARS_FILE: YEARS, CONTRACT: _contract(BY_PLACE)}, "one case of a set's")
    repo.create_tag("by_place")
    config = operator_config(root / "config.yaml", state=root / "state", logs=root / "logs")
    env = {**os.environ, "XDG_STATE_HOME": str(root / "xdg")}
    return {"repo": root / "repo", "config": config, "env": env}


def _run(small: dict[str, object], *args: str) -> subprocess.CompletedProcess[str]:
    return patchwarden(*args, "--config", str(small["config"]), env=small["env"])  # type: ignore[arg-type]


@pytest.mark.bwrap
def test_check_prints_property_by_seed_and_warns_about_always_passing(
    small: dict[str, object],
) -> None:
    proc = _run(small, "contract", "check", "--repo", str(small["repo"]), "--base", "good")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # The working tree holds the typo commit's contract: the check says it reads good's.
    assert lines.pop(0).startswith(
        f"note: {CONTRACT} in the working tree differs from the one committed at "
    )
    assert lines[0].endswith(": 2 properties, seeds 11 29")
    assert lines[1] == (
        "runner: pytest: one sandboxed pytest process per tree and seed; trust: isolated "
        "(the oracle process imports no product code (docs/design/isolated-oracle.md))"
    )
    assert lines[2] == "import roots: . (the tree)"
    assert "prop.always_true, prop.double_is_even collected on the base" in proc.stdout
    header = next(line for line in lines if line.startswith("property"))
    assert header.split() == ["property", "seed", "11", "seed", "29"]
    always = next(line for line in lines if line.startswith("prop.always_true "))
    assert always.split() == ["prop.always_true", "pass", "pass"]
    even = next(line for line in lines if line.startswith("prop.double_is_even "))
    assert even.count("fail: AssertionError at tests/properties/test_double.py:8") == 2
    assert (
        "warning: prop.always_true passes on every seed of the base: a patch has nothing to "
        "clear" in proc.stdout
    )
    assert "warning: prop.double_is_even" not in proc.stdout
    assert proc.stderr == ""  # not a terminal: no progress line


@pytest.mark.bwrap
def test_a_terminal_gets_a_live_progress_line(small: dict[str, object]) -> None:
    """stderr a terminal: one line redrawn with the runs done of the total and the last seed
    (the test above shows a pipe gets nothing)."""
    proc, text = run_on_terminal(
        ["patchwarden", "contract", "check", "--repo", str(small["repo"]), "--base", "good",
         "--config", str(small["config"])],
        env={**small["env"], "COLUMNS": "120"},  # type: ignore[dict-item]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    assert "contract check" in text and "2/2" in text, text
    assert "base seed" in text


@pytest.mark.bwrap
def test_a_misspelt_id_is_refused_by_check_and_by_serve(small: dict[str, object]) -> None:
    expected = (
        f"patchwarden: error: {CONTRACT}:9: property prop.double_is_even: test id {TYPO} is "
        f"not collected on the base (did you mean {NODE}?)\n"
    )
    proc = _run(small, "contract", "check", "--repo", str(small["repo"]), "--base", "typo")
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", expected)
    serve = subprocess.run(
        [
            "patchwarden",
            "serve",
            "--config",
            str(small["config"]),
            "--repo",
            str(small["repo"]),
            "--base",
            "typo",
        ],
        capture_output=True,
        text=True,
        env=small["env"],  # type: ignore[arg-type]
        stdin=subprocess.DEVNULL,
        timeout=300,
        check=False,
    )
    assert (serve.returncode, serve.stdout, serve.stderr) == (2, "", expected)


@pytest.mark.bwrap
def test_one_case_of_a_test_parametrized_over_a_set_is_refused(small: dict[str, object]) -> None:
    expected = (
        f"patchwarden: error: {CONTRACT}:9: property prop.double_is_even: test id {BY_PLACE} "
        f"names one case of {YEARS_FILE}::test_year, which is parametrized over a set: which "
        "case an id such as [expected0] is depends on the hash seed, and every scored run has "
        "its own; name the function, or give the cases ids= in the test\n"
    )
    proc = _run(small, "contract", "check", "--repo", str(small["repo"]), "--base", "by_place")
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", expected)


def test_a_case_id_of_a_set_is_a_problem_and_the_function_is_not() -> None:
    collected = ["t/test_a.py::test_year[1985-expected1]", "t/test_a.py::test_year[1986-expected0]"]
    unordered = ["t/test_a.py::test_year"]
    files = ["t/test_a.py"]
    assert match_test_id("t/test_a.py::test_year", collected, files, [], unordered) == (2, "")
    cases, problem = match_test_id(collected[0], collected, files, [], unordered)
    assert cases == 0 and problem.startswith("names one case of t/test_a.py::test_year, which")
    assert match_test_id(collected[0], collected, files, []) == (1, "")


COLLECTED = [
    "t/test_a.py::test_one",
    "t/test_a.py::test_param[1]",
    "t/test_a.py::test_param[2]",
    "t/test_a.py::TestK::test_x",
    "t/test_a.py::TestK::test_y",
]


@pytest.mark.parametrize(
    ("test", "cases", "problem"),
    [
        ("t/test_a.py::test_one", 1, ""),
        ("t/test_a.py::test_param", 2, ""),
        ("t/test_a.py::test_param[2]", 1, ""),
        ("t/test_a.py::TestK", 0, "selects 2 tests, not one"),
        (
            "t/test_a.py::test_onr",
            0,
            "not collected on the base (did you mean t/test_a.py::test_one?)",
        ),
        ("t/test_b.py::test_one", 0, "its file t/test_b.py does not exist on the base"),
        ("t/test_c.py::test_x", 0, "its file does not collect: E   ModuleNotFoundError: No module"),
    ],
)
def test_ids_match_as_the_runner_maps_them(test: str, cases: int, problem: str) -> None:
    files = ["t/test_a.py", "t/test_c.py"]
    errors = [("t/test_c.py", "Traceback...\nE   ModuleNotFoundError: No module named 'dep'")]
    got_cases, got_problem = match_test_id(test, COLLECTED, files, errors)
    assert got_cases == cases
    assert problem in got_problem and bool(problem) == bool(got_problem)


def test_init_writes_a_skeleton_that_loads_and_never_overwrites(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit(repo, {"tests/test_p.py": "def test_total(): pass\n"}, "tests")
    root = str(tmp_path / "repo")
    proc = patchwarden("contract", "init", "--repo", root, "--test", "tests/test_p.py::test_total")
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / "repo" / CONTRACT).read_text()
    assert written == contract_skeleton(["tests/test_p.py::test_total"])
    contract = parse_contract(written, CONTRACT)
    assert [(p.id, p.test) for p in contract.properties] == [
        ("prop.total", "tests/test_p.py::test_total")
    ]
    assert contract.seeds == [11, 29, 47] and contract.spec_paths == ["tests/test_p.py"]
    assert "# TODO: what must hold" in written
    again = patchwarden("contract", "init", "--repo", root, "--test", "tests/test_p.py::test_x")
    assert again.returncode == 2
    assert again.stderr == (
        f"patchwarden: error: {tmp_path / 'repo' / CONTRACT}: already exists; not overwritten\n"
    )
    assert (tmp_path / "repo" / CONTRACT).read_text() == written
    bad = patchwarden("contract", "init", "--repo", root, "--contract", "c2.yaml", "--test", "x")
    assert bad.returncode == 2 and "relative pytest node id 'path::name'" in bad.stderr
    assert not (tmp_path / "repo" / "c2.yaml").exists()
    missing = patchwarden(
        "contract", "init", "--repo", root, "--contract", "c3.yaml", "--test", "nope.py::t"
    )
    assert missing.returncode == 0
    assert "warning: nope.py does not exist yet" in missing.stderr
    assert json.dumps("nope.py::t") in (tmp_path / "repo" / "c3.yaml").read_text()


GUARDED_MODULE = (
    "def clamp(x, low=0):\n    return low if x < low else x\n\n\ndef other():\n    return 1\n"
)
GUARDED_SUITE = """\
import unittest

from mathlib import clamp, other


def test_clamp_low():
    assert clamp(-1) == 0


def test_other():
    assert other() == 1


class ClampTests(unittest.TestCase):
    def setUp(self):
        self.low = 0

    def test_keeps(self):
        self.assertEqual(clamp(5), 5)

    def test_setup(self):  # a class named after clamp: every test method guards it
        self.assertEqual(self.low, 0)


class TestMisc:
    def test_uses(self):
        assert clamp(2) == 2

    def test_unrelated(self):
        assert True
"""
GUARDED_BUG = (
    "from mathlib import clamp\n\n\ndef test_clamp_high():\n    assert clamp(9, high=5) == 5\n"
)


@pytest.mark.bwrap
def test_init_adds_the_projects_tests_of_a_function_as_guards_that_pass_on_the_base(
    tmp_path: Path,
) -> None:
    repo = init_repo(tmp_path / "repo")
    commit(
        repo,
        {
            "mathlib.py": GUARDED_MODULE,
            "tests/test_clamp.py": GUARDED_SUITE,
            "tests/properties/test_bug.py": GUARDED_BUG,
        },
        "a project with its own tests and a property for a bug",
    )
    root = str(tmp_path / "repo")
    bug = "tests/properties/test_bug.py::test_clamp_high"
    proc = patchwarden(
        "contract", "init", "--repo", root, "--test", bug,
        "--guards-for", "clamp", "--guards-for", "mathlib.other",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / "repo" / CONTRACT).read_text()
    contract = parse_contract(written, CONTRACT)
    # The property itself names clamp too, and is not repeated as a guard.
    assert [(p.id, p.test, p.oracle) for p in contract.properties] == [
        ("prop.clamp_high", bug, ""),
        ("guard.clamp_low", "tests/test_clamp.py::test_clamp_low",
         "the project's test of clamp still passes"),
        ("guard.ClampTests_keeps", "tests/test_clamp.py::ClampTests::test_keeps",
         "the project's test of clamp still passes"),
        ("guard.ClampTests_setup", "tests/test_clamp.py::ClampTests::test_setup",
         "the project's test of clamp still passes"),
        ("guard.TestMisc_uses", "tests/test_clamp.py::TestMisc::test_uses",
         "the project's test of clamp still passes"),
        ("guard.other", "tests/test_clamp.py::test_other",
         "the project's test of mathlib.other still passes"),
    ]  # fmt: skip
    assert contract.spec_paths == ["tests/properties/test_bug.py", "tests/test_clamp.py"]
    assert "# Regression guards:" in written
    assert proc.stdout.splitlines()[1:] == [
        "guards for clamp: 4 tests (tests/test_clamp.py::test_clamp_low, "
        "tests/test_clamp.py::ClampTests::test_keeps, tests/test_clamp.py::ClampTests::test_setup"
        ", ...)",
        "guards for mathlib.other: 1 test (tests/test_clamp.py::test_other)",
        "warning: a guard that asserts the bug (a test the fix must change) makes every "
        "honest fix a regression reject: check the guards against a known-good fix with "
        "`contract check --reference REF`",
        f"next: fill in each oracle, commit the contract with the property tests, then run "
        f"`patchwarden contract check --repo {root}`",
    ]
    # On the base, in the sandbox: every guard is collected (a TestCase method too) and passes
    # on every seed; the property fails.
    commit(repo, {}, "the contract")
    config = operator_config(tmp_path / "config.yaml", state=tmp_path / "state",
                             logs=tmp_path / "logs")  # fmt: skip
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    check = patchwarden(
        "contract", "check", "--repo", root, "--base", "main", "--config", str(config), env=env
    )
    assert check.returncode == 0, check.stdout + check.stderr
    rows = {line.split()[0]: line.split()[1:] for line in check.stdout.splitlines() if line}
    for prop in contract.properties[1:]:
        assert rows[prop.id] == ["pass", "pass", "pass"], check.stdout
    assert rows["prop.clamp_high"][0] == "fail:"


def test_init_refuses_a_guards_for_name_no_test_names(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit(repo, {"mathlib.py": GUARDED_MODULE, "tests/test_clamp.py": GUARDED_SUITE}, "tests")
    root = str(tmp_path / "repo")
    proc = patchwarden(
        "contract", "init", "--repo", root, "--test", "tests/test_clamp.py::test_other",
        "--guards-for", "Version.bump",
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == (
        "patchwarden: error: --guards-for Version.bump: no test function or method in the "
        "repository's test files names 'bump'\n"
    )
    assert not (tmp_path / "repo" / CONTRACT).exists()


def _check_with(outcomes: dict[str, tuple[str, str]]) -> ContractCheck:
    """A ContractCheck as check_contract returns it: prop -> (base, reference) status on
    every seed. Built in memory: the report's layout is what is under test, not the runs."""
    process = ProcessResult((), 0, None, "", "", False, False, False, False, 0.1, "stub")

    def runs(side: int) -> dict[int, PropertyRun]:
        records = [
            PropertyRecord(prop, got[side], "" if got[side] == "pass" else f"{prop}|E|t.py:1", 0.0)
            for prop, got in outcomes.items()
        ]
        return {seed: PropertyRun(seed, records, [], True, [], [], process) for seed in (11, 29)}

    ids = [TestIdCheck(prop, f"t/test_a.py::{prop}", "c.yaml:1", 1, "") for prop in outcomes]
    return ContractCheck("b" * 40, ImportLayout(), ids, [], runs(0), "r" * 40, runs(1))


def test_many_guards_are_summarised_and_warned_about_only_when_they_matter(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from patchwarden.server.cli._contract import _report

    outcomes = {"prop.bug": ("fail", "pass"), "prop.other": ("fail", "fail")}
    outcomes |= {f"guard.g{i}": ("pass", "pass") for i in range(8)}
    outcomes |= {"guard.asserts_bug": ("pass", "fail"), "guard.broken": ("fail", "fail")}
    failed = _report(_check_with(outcomes))
    out = capsys.readouterr().out
    assert "test ids: prop.bug, prop.other and 10 guards collected on the base" in out
    rows = [line.split()[0] for line in out.splitlines() if line.startswith(("prop.", "guard."))]
    assert rows == ["prop.bug", "prop.other", "guard.asserts_bug", "guard.broken"]
    # Each property's isolation (docs/design/isolated-oracle.md); a quiet guard only when it
    # did not run isolated: these hand-built records say in-process.
    assert "isolation: prop.bug: in-process" in out
    assert "guards: 8 of 10 pass on every seed of the base and the reference (not shown)" in out
    assert "passes on every seed of the base" not in out
    assert "warning: guard.broken does not pass on every seed of the base" in out
    assert failed == (
        "prop.other does not pass on the reference rrrrrrrrrrrr: the fix does not make it "
        "hold; guard.asserts_bug fails on the reference rrrrrrrrrrrr: it asserts behaviour "
        "the fix changes; guard.broken fails on the reference rrrrrrrrrrrr: it asserts "
        "behaviour the fix changes"
    )
