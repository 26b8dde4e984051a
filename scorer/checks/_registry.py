"""The scorecard: every check, in the order of the report (docs/design/scorecard.md).

``SCORECARD`` is the one list of checks: ``score`` runs them from it, ``scorecard.json``
and the check lines follow its order, and the tests and docs/design/scorecard.md are
checked against it. To add a check, see docs/architecture.md ("Adding a scorecard check").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..gate import Decision, one_line
from ._base import AfterRuns, BeforeRuns, Check, ScorecardCheck
from ._check_contract_tampered import CONTRACT_TAMPERED
from ._check_differential import DIFFERENTIAL
from ._check_fixture_drifted import FIXTURE_DRIFTED
from ._check_forged import FORGED
from ._check_isolation import ISOLATION
from ._check_oracle_pin import ORACLE_PIN
from ._check_probes import PROBES
from ._check_quarantine import QUARANTINE
from ._check_runner_trust import RUNNER_TRUST
from ._check_shadowing import SHADOWING
from ._check_spec_review import SPEC_REVIEW
from ._check_suspicious import SUSPICIOUS
from ._check_test_tampering import TEST_TAMPERING
from ._context import PlanContext, ScoreContext

SCORECARD: tuple[ScorecardCheck, ...] = (
    CONTRACT_TAMPERED,
    FIXTURE_DRIFTED,
    ORACLE_PIN,
    TEST_TAMPERING,
    SHADOWING,
    DIFFERENTIAL,
    SPEC_REVIEW,
    QUARANTINE,
    SUSPICIOUS,
    FORGED,
    ISOLATION,
    PROBES,
    RUNNER_TRUST,
)


def _checked(check: ScorecardCheck, result: Check) -> Check:
    if result.check != check.name:
        raise AssertionError(f"check {check.name} answered as {result.check!r}")
    return result


def run_before_runs(context: PlanContext) -> dict[str, Check]:
    """The checks that read no run, by name (worked out while the runs go)."""
    return {
        check.name: _checked(check, check.run(context))
        for check in SCORECARD
        if isinstance(check, BeforeRuns)
    }


def run_scorecard(before: Mapping[str, Check], context: ScoreContext) -> list[Check]:
    """Every check in the report's order: those before the runs from ``before``, the others
    run now."""
    return [
        _checked(check, check.run(context)) if isinstance(check, AfterRuns) else before[check.name]
        for check in SCORECARD
    ]


def final_decision(gate: Decision, checks: Sequence[Check]) -> Decision:
    """The gate's decision unless a check rejects."""
    if any(c.outcome == "reject" for c in checks):
        return "reject"
    return gate


def check_lines(checks: Sequence[Check]) -> str:
    """One line per check for the terminal: name, outcome, the first piece of evidence."""
    width = max((len(c.check) for c in checks), default=0)
    lines = []
    for c in checks:
        line = f"check {c.check:<{width}}  {c.outcome:<6}"
        if c.evidence:
            more = f" (+{len(c.evidence) - 1} more)" if len(c.evidence) > 1 else ""
            line += f"  {one_line(c.evidence[0])}{more}"
        lines.append(line.rstrip())
    return "".join(line + "\n" for line in lines)
