"""Isolated failures checked in-process, believed only where the parent's run agrees.

The isolated oracle is not the project's own pytest: a test can fail isolated for a reason
of the oracle's (``type(f) is type(lambda: None)`` of a product function, a test's ``float``
subclass that C code in the product needs as a ``float``) where it passes in one process.
Such a failure on both trees made an honest fix's guard ``uniform_fail`` and rejected it.

So after both trees ran, each property that failed isolated on the parent **and** on the
patch for a seed runs again on both, in-process, in a run of its own per tree
(``RunUnit.recheck``; ``PropertyRecord.recheck`` keeps the status), and the in-process
``pass`` is believed only where it cannot have been steered by the patch:

- it fails isolated and passes in-process on the **parent** (whose code the agent did not
  write) and does the same on the patch: both records become a ``pass`` judged in-process,
  named (``isolation`` finding), as any fallback;
- anything else stands: a failure on the patch alone is never run again (product code can
  tell the isolated oracle from one process and fail only there,
  tests/attacks/isolation_cases.py), a failure in-process is a failure, and a recheck that
  did not complete, or was forged, tells nothing.

A parent that fails isolated where the patch passes is not run again: whether the parent's
failure was the bug or a limit of the oracle, the property's decision is the same accept.

``contract check`` and ``task from-fix`` do not recheck: a test that fails isolated where it
would pass in one process is shown failing there (a task leaves it out: it does not pass on
both trees, or its empty patch is not rejected). The conformance bench asks the runner to
recheck every isolated failure of its one tree (``recheck_failures``) and reads it as a
guard that does the same on both trees.

docs/design/isolated-oracle.md, "Failures checked in-process".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

from patchwarden.sandbox import PropertyRecord, PropertyRun

from ._groups import split_run_name

if TYPE_CHECKING:  # the checks import this module, and the executors import the checks
    from .executors import RunOutcome, RunUnit, UnitKey

RECHECKED = (
    "in-process: it fails isolated and passes in-process on the parent as on the patch "
    "(a limit of the isolated oracle, not the patch's answer)"
)


def failed_isolated(record: PropertyRecord) -> bool:
    return record.status == "fail" and record.isolation == "isolated"


def isolation_gap(record: PropertyRecord) -> bool:
    """Failed isolated, passed when run again in-process."""
    return failed_isolated(record) and record.recheck == "pass"


def reconcile(outcomes: Mapping[UnitKey, RunOutcome]) -> dict[UnitKey, RunOutcome]:
    """Every parent run paired with the patch's run of the same group and seed, each gap
    the parent shows judged in-process on both (see the module docstring)."""
    out = dict(outcomes)
    for (run_name, seed), outcome in outcomes.items():
        if split_run_name(run_name)[1] != "parent":
            continue
        partner_key = (run_name.removesuffix("parent") + "patch", seed)
        partner = outcomes.get(partner_key)
        if partner is None:
            continue
        parent_run, patch_run = reconcile_pair(outcome.run, partner.run)
        out[(run_name, seed)] = dataclasses.replace(outcome, run=parent_run)
        out[partner_key] = dataclasses.replace(partner, run=patch_run)
    return out


def reconcile_pair(parent: PropertyRun, patch: PropertyRun) -> tuple[PropertyRun, PropertyRun]:
    """(parent, patch) with the parent's gaps judged in-process where the patch passes
    isolated or shows the same gap."""
    theirs = {r.prop: r for r in patch.records}
    gaps = {
        r.prop
        for r in parent.records
        if isolation_gap(r)
        and r.prop in theirs
        and (theirs[r.prop].status == "pass" or isolation_gap(theirs[r.prop]))
    }
    if not gaps:
        return parent, patch
    return _judged(parent, gaps), _judged(patch, gaps)


def _judged(run: PropertyRun, gaps: set[str]) -> PropertyRun:
    records = [
        dataclasses.replace(r, status="pass", witness="", isolation=RECHECKED)
        if r.prop in gaps and isolation_gap(r)
        else r
        for r in run.records
    ]
    return dataclasses.replace(run, records=records)


RECHECK_FLOOR_S = 15.0
"""The least time a recheck run gets (an interpreter, pytest and the project's imports)."""


def recheck_limits(unit: RunUnit, records: Sequence[PropertyRecord]) -> RunUnit:
    """``unit`` with its wall and idle limits cut to what the rechecked properties took
    isolated, twice over, plus RECHECK_FLOOR_S: in one process a test is no slower than
    isolated, and a bug that hangs (cut at the call deadline isolated, with no deadline
    in-process) must not cost the run's whole limit per seed."""
    bound = RECHECK_FLOOR_S + 2 * sum(r.duration_s for r in records)
    limits = unit.limits.model_copy(
        update={
            "wall_time_s": min(unit.limits.wall_time_s, bound),
            "idle_time_s": min(unit.limits.idle_time_s, bound),
        }
    )
    return dataclasses.replace(unit, limits=limits)


def recheck_units(
    units: Sequence[RunUnit], outcomes: Mapping[UnitKey, RunOutcome]
) -> dict[UnitKey, RunUnit]:
    """The in-process runs to ask for: per group and seed, the properties that failed
    isolated on both trees, on both trees (keyed as the units they check)."""
    by_key = {unit.key: unit for unit in units}
    wanted: dict[UnitKey, RunUnit] = {}
    for key in by_key:
        run_name, seed = key
        if split_run_name(run_name)[1] != "parent":
            continue
        partner = (run_name.removesuffix("parent") + "patch", seed)
        if partner not in by_key or key not in outcomes or partner not in outcomes:
            continue
        runs = [outcomes[key].run, outcomes[partner].run]
        if not all(run.complete and not run.forged for run in runs):
            continue
        failing = [{r.prop for r in run.records if failed_isolated(r)} for run in runs]
        both = failing[0] & failing[1]
        for which, run in zip((key, partner), runs, strict=True) if both else ():
            unit = by_key[which]
            targets = tuple(t for t in unit.targets if t.prop in both)
            rechecked = [r for r in run.records if r.prop in both]
            unit = dataclasses.replace(unit, targets=targets, recheck=True)
            wanted[which] = recheck_limits(unit, rechecked)
    return wanted


def recheck(
    units: Sequence[RunUnit],
    outcomes: Mapping[UnitKey, RunOutcome],
    submit: Callable[[RunUnit], Future[RunOutcome]],
) -> dict[UnitKey, RunOutcome]:
    """``outcomes`` with the needed rechecks' statuses in the records they check: first the
    parent's (a red test that is red in-process too, the bug a lazy patch left, ends it
    there), then the patch's, of what passed on the parent. A recheck unit that fails (an
    error, not a red test) leaves its records as they were."""
    wanted = recheck_units(units, outcomes)
    out = dict(outcomes)
    parents = {k: u for k, u in wanted.items() if split_run_name(k[0])[1] == "parent"}
    passed = _rechecked(out, outcomes, {k: submit(u) for k, u in parents.items()})
    patches: dict[UnitKey, Future[RunOutcome]] = {}
    for (run_name, seed), props in passed.items():
        partner = (run_name.removesuffix("parent") + "patch", seed)
        if props and partner in wanted:
            unit = wanted[partner]
            targets = tuple(t for t in unit.targets if t.prop in props)
            patches[partner] = submit(dataclasses.replace(unit, targets=targets))
    _rechecked(out, outcomes, patches)
    return out


def _rechecked(
    out: dict[UnitKey, RunOutcome],
    outcomes: Mapping[UnitKey, RunOutcome],
    futures: Mapping[UnitKey, Future[RunOutcome]],
) -> dict[UnitKey, set[str]]:
    """Write each finished recheck's statuses into ``out``; the properties that passed."""
    passed: dict[UnitKey, set[str]] = {}
    for key, future in futures.items():
        try:
            again = future.result().run
        except Exception:
            continue
        if not again.complete or again.forged:
            continue
        statuses = {r.prop: r.status for r in again.records}
        passed[key] = {prop for prop, status in statuses.items() if status == "pass"}
        base = outcomes[key]
        records = [
            dataclasses.replace(r, recheck=statuses[r.prop])
            if r.prop in statuses and failed_isolated(r)
            else r
            for r in base.run.records
        ]
        out[key] = dataclasses.replace(base, run=dataclasses.replace(base.run, records=records))
    return passed
