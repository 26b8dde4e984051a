"""``suspicious``: product code the patch makes reach into the test machinery (found from
the syntax tree: scorer/checks/_suspicious.py), or that special-cases a property's concrete
inputs (scorer/checks/_special_case.py; docs/design/spec-review.md). A review finding."""

from __future__ import annotations

from collections.abc import Sequence

from ._base import BeforeRuns, Check, SourceChange, found
from ._context import PlanContext
from ._special_case import PropertyInputs, special_case_lines
from ._suspicious import new_suspicious


def check_suspicious(
    sources: Sequence[SourceChange],
    seeds: Sequence[int],
    inputs: PropertyInputs | None = None,
) -> Check:
    """``sources``: the patch's changed non-test Python files; ``seeds``: the contract's."""
    hits = [
        finding.evidence()
        for source in sources
        if source.patch is not None
        for finding in new_suspicious(source.path, source.parent, source.patch, seeds)
    ]
    hits += special_case_lines(sources, inputs)
    return found("suspicious", hits, when="review")


def _run(context: PlanContext) -> Check:
    return check_suspicious(context.sources, context.contract.seeds, context.inputs)


SUSPICIOUS = BeforeRuns("suspicious", _run)
