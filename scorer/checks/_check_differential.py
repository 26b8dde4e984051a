"""``differential``: the gate's decision (docs/design/differential-gate.md), the hidden
groups' gates (extra seeds, held-out properties) counting the same."""

from __future__ import annotations

from collections.abc import Mapping

from ..gate import Decision, GateResult, deciding_first
from ._base import AfterRuns, Check, Outcome
from ._context import ScoreContext

OUTCOME_OF_DECISION: dict[str, Outcome] = {
    "accept": "pass",
    "reject": "reject",
    "propose_freeze": "review",
    "skipped": "review",
}


def differential_check(gate: GateResult, hidden: Mapping[str, GateResult]) -> Check:
    """The hidden gates' evidence is prefixed by the group (reviewers only: the agent sees
    outcomes). The rows that decide come first, across the groups (a held-out reject before
    the contract's accepts): the check's line in ``score`` shows the first."""
    gates = [("", gate), *((f"{name}: ", g) for name, g in hidden.items())]
    outcomes = {OUTCOME_OF_DECISION[g.decision] for _, g in gates}
    severity: tuple[Outcome, ...] = ("reject", "review", "pass")
    outcome = next(o for o in severity if o in outcomes)
    lines: list[tuple[Decision, str]] = []
    for prefix, g in gates:
        lines += [(r.decision, f"{prefix}{r.prop}: {r.reason}") for r in g.results]
        if g.skip_reason:
            lines.append(("skipped", f"{prefix}gate skipped: {g.skip_reason}"))
    evidence = [line for _, line in deciding_first(lines, lambda pair: pair[0])]
    return Check(check="differential", outcome=outcome, evidence=evidence)


def _run(context: ScoreContext) -> Check:
    return differential_check(context.gate, context.hidden)


DIFFERENTIAL = AfterRuns("differential", _run)
