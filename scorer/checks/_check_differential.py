"""``differential``: the gate's decision (docs/design/differential-gate.md), the hidden
groups' gates (extra seeds, held-out properties) counting the same."""

from __future__ import annotations

from ._base import AfterRuns, Check, Outcome
from ._context import ScoreContext

OUTCOME_OF_DECISION: dict[str, Outcome] = {
    "accept": "pass",
    "reject": "reject",
    "propose_freeze": "review",
    "skipped": "review",
}


def _run(context: ScoreContext) -> Check:
    """The hidden gates' evidence is prefixed by the group (reviewers only: the agent sees
    outcomes)."""
    gates = [("", context.gate), *((f"{name}: ", g) for name, g in context.hidden.items())]
    outcomes = {OUTCOME_OF_DECISION[g.decision] for _, g in gates}
    severity: tuple[Outcome, ...] = ("reject", "review", "pass")
    outcome = next(o for o in severity if o in outcomes)
    evidence = []
    for prefix, g in gates:
        evidence += [f"{prefix}{r.prop}: {r.reason}" for r in g.results]
        if g.skip_reason:
            evidence.append(f"{prefix}gate skipped: {g.skip_reason}")
    return Check(check="differential", outcome=outcome, evidence=evidence)


DIFFERENTIAL = AfterRuns("differential", _run)
