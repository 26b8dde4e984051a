"""``isolation``: properties that ran in the process that imports the product.

The scorer runs each property with the product in a sandboxed process of its own
(docs/design/isolated-oracle.md). A property that could not (its test module sits inside a
product package, it patches the product, it passes the product an object of its own) ran
again in-process, where product code shares the oracle's interpreter; the evidence names the
property, the runs and the first call that could not cross. The outcome is the operator's
(``scorer.isolation``). With ``sandbox.oracle: in-process`` every property runs in-process by
the operator's choice: the check passes and says so.
"""

from __future__ import annotations

from collections.abc import Mapping

from patchwarden.sandbox import PropertyRun

from ._base import AfterRuns, Check, Severity, found
from ._context import ScoreContext

OPERATOR_CHOICE = "every property ran in-process (sandbox.oracle: in-process)"


def in_process(runs: Mapping[tuple[str, int], PropertyRun]) -> list[str]:
    """One line per property that fell back to the in-process runner: why, and in which
    runs (name and seed)."""
    where: dict[str, list[str]] = {}
    for (name, seed), run in sorted(runs.items()):
        for record in run.records:
            if record.isolation.startswith("in-process: "):
                line = f"{record.prop} {record.isolation}"
                where.setdefault(line, []).append(f"{name} seed {seed}")
    return [f"{line} ({', '.join(runs_)})" for line, runs_ in where.items()]


def _run(context: ScoreContext) -> Check:
    hits = in_process(context.runs)
    records = [r for run in context.runs.values() for r in run.records]
    if not hits and records and all(r.isolation == "in-process" for r in records):
        return Check(check="isolation", outcome="pass", evidence=[OPERATOR_CHOICE])
    return found("isolation", hits, when=context.plan.config.isolation)


ISOLATION = AfterRuns("isolation", _run, severity=Severity("isolation"))
