"""``fixture_drifted``: a manifest fixture's digest differs, or a tree changed, before or
after the runs (docs/design/scoring.md, steps 8, 9 and 11)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .._contract import Contract
from .._fixtures import guard_fixtures, read_manifest
from ._base import AfterRuns, Check, found
from ._context import ScoreContext
from ._restore import tree_entries


def fixture_drifts(trees: Mapping[str, Path], contract: Contract) -> list[str]:
    """What the fixture guard finds in each tree (``parent: ...``, then ``patch: ...``)."""
    if not contract.fixture_manifest:
        return []
    lines = []
    for label, tree in trees.items():
        manifest_path = tree / contract.fixture_manifest
        if not manifest_path.is_file():
            lines.append(f"{label}: fixture manifest missing: {contract.fixture_manifest}")
            continue
        drifts = guard_fixtures(tree, read_manifest(manifest_path))
        lines += [f"{label}: {d.message()}" for d in drifts]
    return lines


def snapshot(tree: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every entry of ``tree``."""
    snap = {}
    for rel in tree_entries(tree):
        stat = (tree / rel).lstat()
        snap[rel] = (stat.st_size, stat.st_mtime_ns)
    return snap


def _run(context: ScoreContext) -> Check:
    plan = context.plan
    drifts = list(plan.drifts)
    drifts += [d + " (after the runs)" for d in fixture_drifts(plan.trees, plan.contract)]
    drifts += [
        f"{name}: the tree changed during the runs"
        for name, tree in plan.trees.items()
        if snapshot(tree) != plan.snapshots[name]
    ]
    drifts += [line for outcome in context.outcomes.values() for line in outcome.drift]
    return found("fixture_drifted", drifts)


FIXTURE_DRIFTED = AfterRuns("fixture_drifted", _run)
