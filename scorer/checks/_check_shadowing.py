"""``shadowing``: the patch adds what would take over the test machinery, or the runs
imported something from the tree in its place (docs/design/runner.md).

From the diff: added or changed paths named like the test machinery (``pytest``,
``hypothesis``, ``sitecustomize``...), ``.pth`` files and bytecode, and added top-level
modules named like the standard library. From the runs: what the reporter saw replaced in
the patch's runs but not the parent's, project code loaded from outside the tree, and
Hypothesis settings of a property that differ from the parent's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

from patchwarden.sandbox import MACHINERY_NAMES, PropertyRecord, PropertyRun

from .._groups import split_run_name
from ._base import AfterRuns, Check, found
from ._context import ScoreContext

FOREIGN_MODULE = "ForeignModule"
"""The exception slot of a witness the runner writes when the project's code came from
outside the tree (provenance, docs/design/runner.md)."""

Runs = Mapping[tuple[str, int], PropertyRun]


def shadowing_paths(paths: Iterable[str]) -> list[str]:
    """Paths that would take over the test machinery if importable."""
    hits = []
    for path in paths:
        pure = PurePosixPath(path)
        names = {*pure.parts[:-1], pure.stem if pure.suffix == ".py" else pure.name}
        bytecode = pure.suffix in (".pyc", ".pyo") or "__pycache__" in pure.parts
        if pure.suffix == ".pth" or names & MACHINERY_NAMES or bytecode:
            hits.append(path)
    return hits


def shadows_stdlib(path: str) -> bool:
    """A top-level module or package of the tree named like a standard-library module
    (the tree is first on sys.path, so it would be imported in its place)."""
    pure = PurePosixPath(path)
    top = pure.parts[0] if len(pure.parts) > 1 else pure.stem
    return pure.suffix == ".py" and top in sys.stdlib_module_names


def _foreign(record: PropertyRecord) -> bool:
    parts = record.witness.split("|", 2)
    return len(parts) == 3 and parts[1] == FOREIGN_MODULE


def _foreign_code(runs: Runs) -> list[str]:
    """Runs, of either tree, that imported the project's code from outside the tree: the
    verdict would measure the wrong code, so the shadowing check rejects."""
    seen: dict[str, None] = {}
    for (name, _seed), run in sorted(runs.items()):
        for record in run.records:
            if _foreign(record):
                detail = record.witness.split("|", 2)[2]
                seen.setdefault(f"{name}: project code loaded from outside the tree: {detail}")
    return list(seen)


def runtime_tampering(runs: Runs) -> list[str]:
    """What the reporter saw replaced in the patch runs but not in the parent's, and
    properties whose Hypothesis settings differ from the parent's (the test files are
    the parent's in both trees, so only the patch's code can have changed them)."""
    seen = {
        tree: {
            s
            for (name, _), run in runs.items()
            if split_run_name(name)[1] == tree
            for s in run.shadowed
        }
        for tree in ("parent", "patch")
    }
    lines = sorted(seen["patch"] - seen["parent"]) + _foreign_code(runs)
    for (name, seed), run in runs.items():
        _, tree = split_run_name(name)
        if tree != "patch":
            continue
        # A property stopped for provenance never ran: it has no settings to compare.
        twin = runs[(name.removesuffix("patch") + "parent", seed)]
        parent = {r.prop: r.settings for r in twin.records if not _foreign(r)}
        for record in run.records:
            if _foreign(record):
                continue
            if record.prop in parent and record.settings != parent[record.prop]:
                # A ctest record's settings are its test's definition (sandbox/_ctest_runner.py).
                what = (
                    "ctest definition" if "ctest " in parent[record.prop] else "Hypothesis settings"
                )
                lines.append(
                    f"{what} of {record.prop} differ from the parent's "
                    f"(seed {seed}): {record.settings or 'none'}"
                )
    return lines


def _run(context: ScoreContext) -> Check:
    hits = [
        f"{c.status} {c.path}"
        for c in context.plan.changes
        if (c.status != "D" and shadowing_paths([c.path]))
        or (c.status == "A" and shadows_stdlib(c.path))
    ]
    hits += [f"at run time: {name}" for name in runtime_tampering(context.runs)]
    return found("shadowing", hits)


SHADOWING = AfterRuns("shadowing", _run)
