"""``spec_review``: a ``parent_fail_cleared`` accept whose patch moves a boundary, changes a
fixture or special-cases a property's input (review; docs/design/spec-review.md).

Moved boundaries (an existing comparison's operator or constant changed or removed:
scorer/checks/_spec_review.py), changed fixtures and special cases are findings; purely
added comparisons and constants (a new guard) are notes, and so is a moved boundary the
properties pin down (every nudge of it failed one: scorer/_pinning.py). The evidence lists
them all, cleared property or not; the outcome is ``review`` only when some property was
cleared and there is a finding.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from .._contract import Contract
from .._fixtures import read_manifest
from ..gate import GateResult, Reason
from ._base import AfterRuns, Check, SourceChange
from ._context import ScoreContext
from ._spec_review import boundary_changes
from ._special_case import PropertyInputs, special_case_lines

ADDED_GUARD_NOTE = "note (an added guard, not a moved boundary): "
PINNED_NOTE = "note (moved, but pinned: every nudge of it fails a property): "
NUDGE_NOTE = "note (nudge): "


def check_spec_review(
    gate: GateResult,
    sources: Sequence[SourceChange],
    fixture_changes: Sequence[str],
    inputs: PropertyInputs | None = None,
    *,
    pinned: Collection[tuple[str, str]] = (),
    nudges: Sequence[str] = (),
) -> Check:
    """``pinned``: (path, scope) whose moved boundary the properties pin down; ``nudges``:
    what each nudge did."""
    cleared = [r.prop for r in gate.results if r.reason == Reason.PARENT_FAIL_CLEARED]
    changes = [
        change
        for source in sources
        for change in boundary_changes(source.path, source.parent, source.patch)
    ]
    hits = [c.evidence() for c in changes if c.moved and (c.path, c.scope) not in pinned]
    hits += [f"fixture changed: {path}" for path in fixture_changes]
    hits += special_case_lines(sources, inputs)
    notes = [PINNED_NOTE + c.evidence() for c in changes if c.moved and (c.path, c.scope) in pinned]
    notes += [ADDED_GUARD_NOTE + c.evidence() for c in changes if not c.moved]
    notes += [NUDGE_NOTE + line for line in nudges]
    cleared_line = [f"parent_fail_cleared: {', '.join(cleared)}"] if cleared and hits else []
    return Check(
        check="spec_review",
        outcome="review" if cleared and hits else "pass",
        evidence=hits + cleared_line + notes,
    )


def fixture_paths(tree: Path, contract: Contract) -> set[str]:
    """The parent's manifest and its fixtures."""
    if not contract.fixture_manifest:
        return set()
    manifest = tree / contract.fixture_manifest
    if not manifest.is_file():
        return {contract.fixture_manifest}
    return {contract.fixture_manifest, *(e.fixture for e in read_manifest(manifest).fixtures)}


def _run(context: ScoreContext) -> Check:
    plan = context.plan
    fixtures = fixture_paths(plan.trees["parent"], plan.contract)
    return check_spec_review(
        context.gate,
        plan.sources,
        [c.path for c in plan.changes if c.path in fixtures],
        plan.inputs,
        pinned=context.pinned,
        nudges=context.nudges,
    )


SPEC_REVIEW = AfterRuns("spec_review", _run)
