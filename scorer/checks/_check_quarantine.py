"""``quarantine``: which tests the agent's loop left out and why, never silent
(docs/design/contract-layers.md).

The evidence lists them with the sweep's counts, and the tests broken on the base; a
quarantine list that cannot be read makes it ``review``: a list nobody can read must not
quietly hide tests.
"""

from __future__ import annotations

from .._errors import InputError
from ..layers import QuarantineList, quarantine_list_path, read_quarantine_list
from ._base import BeforeRuns, Check
from ._context import PlanContext


def _run(context: PlanContext) -> Check:
    rel = quarantine_list_path(context.contract)
    qlist: QuarantineList | None = None
    problems = []
    try:
        qlist = read_quarantine_list(context.trees["parent"] / rel)
    except InputError as exc:
        problems.append(f"quarantine list unreadable: {rel}: {exc.message}")
    quarantined = context.quarantined
    left_out = list(quarantined) if quarantined is not None else (qlist.test_ids() if qlist else [])
    why = {
        t.test_id: f"failed {t.failures} of {t.runs} sweep runs, quarantined since {t.since}"
        for t in (qlist.tests if qlist else [])
    }
    broken = [t.test_id for t in qlist.broken] if qlist else []
    evidence = [f"left out: {t} ({why[t]})" if t in why else f"left out: {t}" for t in left_out]
    evidence += [f"broken on the base (failed every sweep run): {t}" for t in broken]
    evidence += problems
    return Check(check="quarantine", outcome="review" if problems else "pass", evidence=evidence)


QUARANTINE = BeforeRuns("quarantine", _run)
