"""The scorecard's registry (scorer/checks/_registry.py) is the one list of checks: the
report's order, the design doc's table and the operator settings all follow it.

Pure and in memory: the checks run over a context built by hand on two small trees.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from patchwarden.scorer import Contract, Property, ScorerConfig
from patchwarden.scorer.checks import (
    SCORECARD,
    AfterRuns,
    BeforeRuns,
    Change,
    Check,
    PlanContext,
    PropertyInputs,
    run_before_runs,
)

ROOT = Path(__file__).resolve().parents[1]
TABLE_ROW = re.compile(
    r"^\| `(?P<name>[a-z_]+)` \| (?P<phase>before|after) \| (?P<outcome>[^|]+) \|"
)


def _doc_rows() -> list[tuple[str, str, str]]:
    text = (ROOT / "docs" / "design" / "scorecard.md").read_text()
    return [
        (m["name"], m["phase"], m["outcome"])
        for line in text.splitlines()
        if (m := TABLE_ROW.match(line))
    ]


def test_each_check_is_listed_once_in_report_order() -> None:
    names = [check.name for check in SCORECARD]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*", name) for name in names)
    assert all(isinstance(check, BeforeRuns | AfterRuns) for check in SCORECARD)


def test_the_design_doc_has_one_row_per_check_in_registry_order() -> None:
    rows = _doc_rows()
    assert [(name, phase) for name, phase, _ in rows] == [
        (check.name, check.phase.removesuffix("_runs")) for check in SCORECARD
    ]


def test_the_reviewer_guide_explains_every_check_in_registry_order() -> None:
    text = (ROOT / "docs" / "reviewer-guide.md").read_text()
    rows = re.findall(r"^ *\| `([a-z_]+)` \| ", text, flags=re.MULTILINE)
    assert rows == [check.name for check in SCORECARD]


def test_an_operator_severity_is_a_scorer_setting_the_schema_and_doc_name() -> None:
    schema = json.loads((ROOT / "configs" / "schema.json").read_text())
    scorer = schema["$defs"]["ScorerConfig"]["properties"]
    outcomes = dict((name, outcome) for name, _, outcome in _doc_rows())
    with_severity = [check for check in SCORECARD if check.severity is not None]
    assert {"test_tampering", "isolation"} <= {check.name for check in with_severity}
    for check in with_severity:
        assert check.severity is not None
        setting = check.severity.setting
        assert set(check.severity.choices) <= {"pass", "review", "reject"}
        assert scorer[setting]["enum"] == list(check.severity.choices)
        assert scorer[setting]["default"] == check.severity.default
        assert f"`scorer.{setting}`" in outcomes[check.name]


@pytest.fixture
def trees(tmp_path: Path) -> dict[str, Path]:
    found = {}
    for name in ("parent", "patch"):
        tree = tmp_path / name
        (tree / "tests").mkdir(parents=True)
        (tree / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
        found[name] = tree
    return found


def _context(trees: dict[str, Path], config: ScorerConfig, changes: list[Change]) -> PlanContext:
    contract = Contract(seeds=[11], properties=[Property(id="prop.a", test="tests/test_a.py::t")])
    return PlanContext(
        config=config,
        contract=contract,
        trees=trees,
        changes=changes,
        contract_paths=["contract/differential-contract.yaml"],
        sources=[],
        inputs=PropertyInputs(),
        quarantined=None,
        drifts=[],
        snapshots={},
    )


@pytest.mark.parametrize("setting", ["review", "reject"])
def test_the_checks_before_the_runs_read_the_plan_and_the_operators_severity(
    trees: dict[str, Path], setting: str
) -> None:
    changes = [
        Change(status="M", path="tests/test_a.py"),
        Change(status="A", path="contract/differential-contract.yaml"),
    ]
    config = ScorerConfig(test_tampering=setting)  # type: ignore[arg-type]
    checks = run_before_runs(_context(trees, config, changes))
    assert list(checks) == [c.name for c in SCORECARD if isinstance(c, BeforeRuns)]
    assert checks["test_tampering"] == Check(
        check="test_tampering", outcome=setting, evidence=["M tests/test_a.py"]
    )
    assert checks["oracle_pin"] == Check(
        check="oracle_pin", outcome="reject", evidence=["M tests/test_a.py"]
    )
    assert checks["contract_tampered"] == Check(
        check="contract_tampered",
        outcome="reject",
        evidence=["A contract/differential-contract.yaml"],
    )
    assert checks["quarantine"] == Check(check="quarantine", outcome="pass", evidence=[])
    assert checks["suspicious"] == Check(check="suspicious", outcome="pass", evidence=[])


def test_isolation_names_each_property_that_ran_in_process_at_the_operators_severity() -> None:
    from types import SimpleNamespace

    from patchwarden.sandbox import PropertyRecord, PropertyRun
    from patchwarden.scorer.checks._check_isolation import ISOLATION, OPERATOR_CHOICE

    def run(*isolation: str) -> PropertyRun:
        records = [
            PropertyRecord(prop=f"prop.{n}", status="pass", witness="", duration_s=0.0, isolation=i)
            for n, i in enumerate(isolation)
        ]
        return PropertyRun(
            seed=3, records=records, missing=[], complete=True, shadowed=[], problems=[],
            process=None,  # type: ignore[arg-type]  # the check reads the records only
        )  # fmt: skip

    def outcome(severity: str, *runs: PropertyRun) -> tuple[str, list[str]]:
        config = ScorerConfig(isolation=severity)  # type: ignore[arg-type]
        context = SimpleNamespace(
            plan=SimpleNamespace(config=config),
            runs={(f"run{i}", 3): r for i, r in enumerate(runs)},
        )
        check = ISOLATION.run(context)  # type: ignore[arg-type]
        return check.outcome, check.evidence

    why = "in-process: the property sets orders.CENT (patches the product)"
    assert outcome("review", run("isolated", "isolated")) == ("pass", [])
    assert outcome("review", run("isolated", why), run("isolated", why)) == (
        "review",
        [f"prop.1 {why} (run0 seed 3, run1 seed 3)"],
    )
    assert outcome("reject", run(why))[0] == "reject"
    assert outcome("pass", run(why))[0] == "pass"
    assert outcome("review", run("in-process")) == ("pass", [OPERATOR_CHOICE])
