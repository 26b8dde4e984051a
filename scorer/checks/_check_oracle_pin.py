"""``oracle_pin``: the patch changes a file holding one of the contract's properties."""

from __future__ import annotations

from ._base import BeforeRuns, Check, found
from ._context import PlanContext


def _run(context: PlanContext) -> Check:
    oracle_files = {p.test.split("::", 1)[0] for p in context.contract.properties}
    hits = [f"{c.status} {c.path}" for c in context.changes if c.path in oracle_files]
    return found("oracle_pin", hits)


ORACLE_PIN = BeforeRuns("oracle_pin", _run)
