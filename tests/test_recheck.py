"""An isolated failure that passes in-process is believed only where the parent's run shows
the same (scorer/_recheck.py). Pure: records in, records out."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

from patchwarden.sandbox import Limits, ProcessResult, PropertyRecord, PropertyRun, PropertyTarget
from patchwarden.scorer._recheck import RECHECKED, recheck, recheck_units, reconcile_pair
from patchwarden.scorer.executors import RunOutcome, RunUnit

PROCESS = ProcessResult((), 0, None, "", "", False, False, False, False, 0.1, "bwrap")


def _record(
    status: str, recheck: str = "", isolation: str = "isolated", prop: str = "prop.g"
) -> PropertyRecord:
    witness = f"{prop}|AssertionError|tests/test_g.py:3" if status == "fail" else ""
    return PropertyRecord(prop, status, witness, 0.1, isolation=isolation, recheck=recheck)


def _run(*records: PropertyRecord, complete: bool = True) -> PropertyRun:
    return PropertyRun(11, list(records), [], complete, [], [], PROCESS)


def _pair(parent: PropertyRecord, patch: PropertyRecord) -> tuple[tuple[str, str], ...]:
    new_parent, new_patch = reconcile_pair(_run(parent), _run(patch))
    return tuple((r.records[0].status, r.records[0].isolation) for r in (new_parent, new_patch))


GAP = _record("fail", recheck="pass")
JUDGED = ("pass", RECHECKED)


def test_a_gap_on_both_trees_is_judged_in_process_on_both() -> None:
    assert _pair(GAP, GAP) == (JUDGED, JUDGED)


def test_a_gap_on_the_parent_with_the_patch_passing_isolated_is_both_pass() -> None:
    assert _pair(GAP, _record("pass")) == (JUDGED, ("pass", "isolated"))


def test_a_gap_on_the_patch_alone_stays_a_failure() -> None:
    """Product code can fail only where it is isolated (a patch that tells): the parent,
    which the agent did not write, passing isolated decides."""
    assert _pair(_record("pass"), GAP) == (("pass", "isolated"), ("fail", "isolated"))
    assert _pair(_record("fail", recheck="fail"), GAP) == (
        ("fail", "isolated"),
        ("fail", "isolated"),
    )


def test_a_real_failure_on_the_patch_is_never_judged_in_process() -> None:
    assert _pair(GAP, _record("fail", recheck="fail")) == (
        ("fail", "isolated"),
        ("fail", "isolated"),
    )
    assert _pair(GAP, _record("fail")) == (("fail", "isolated"), ("fail", "isolated"))


def test_only_isolated_failures_count_as_gaps() -> None:
    fallback = _record("fail", recheck="pass", isolation="in-process: it patches the product")
    assert _pair(fallback, fallback) == (
        ("fail", fallback.isolation),
        ("fail", fallback.isolation),
    )


def _unit(tree: str, group: str = "contract") -> RunUnit:
    return RunUnit(
        label="r1",
        tree_name=tree,
        seed=11,
        tree=Path("/nonexistent") / tree,
        targets=tuple(PropertyTarget(p, f"tests/test_g.py::test_{p[5:]}") for p in PROPS),
        contract_paths=("contract",),
        limits=Limits(),
        group=group,
    )


PROPS = ("prop.a", "prop.b", "prop.c")
UNITS = [_unit("parent"), _unit("patch"), _unit("parent", "held_out"), _unit("patch", "held_out")]


def _outcomes(parent: PropertyRun, patch: PropertyRun) -> dict:
    return {
        ("parent", 11): RunOutcome(run=parent),
        ("patch", 11): RunOutcome(run=patch),
        ("held_out:parent", 11): RunOutcome(run=_run(_record("pass", prop="prop.a"))),
        ("held_out:patch", 11): RunOutcome(run=_run(_record("pass", prop="prop.a"))),
    }


def test_only_what_fails_isolated_on_both_trees_is_run_again_on_both() -> None:
    """prop.a fails isolated on both (run again, alone); prop.b fails on the parent and passes
    on the patch (the decision is accept either way: not run again); prop.c fails on the
    patch alone (never run again: the patch could be failing only where it is isolated)."""
    parent = _run(
        _record("fail", prop="prop.a"),
        _record("fail", prop="prop.b"),
        _record("pass", prop="prop.c"),
    )
    patch = _run(
        _record("fail", prop="prop.a"),
        _record("pass", prop="prop.b"),
        _record("fail", prop="prop.c"),
    )
    wanted = recheck_units(UNITS, _outcomes(parent, patch))
    assert sorted(wanted) == [("parent", 11), ("patch", 11)]
    assert all(u.recheck and [t.prop for t in u.targets] == ["prop.a"] for u in wanted.values())
    assert wanted[("patch", 11)].request(Path("/t"), _config(), None).config.oracle == "in-process"
    # a recheck gets the time the failure took isolated, twice, plus a floor: a bug that
    # hangs (cut at the call deadline isolated) does not cost the run's whole limit
    assert wanted[("patch", 11)].limits.wall_time_s == 15.0 + 2 * 0.1
    assert wanted[("patch", 11)].limits.idle_time_s == 15.0 + 2 * 0.1


def test_an_incomplete_run_asks_for_no_recheck() -> None:
    failing = _record("fail", prop="prop.a")
    assert recheck_units(UNITS, _outcomes(_run(failing), _run(failing, complete=False))) == {}


def _config():  # type: ignore[no-untyped-def]
    from patchwarden.sandbox import SandboxConfig

    return SandboxConfig()


def _answered(run: PropertyRun) -> Future[RunOutcome]:
    future: Future[RunOutcome] = Future()
    future.set_result(RunOutcome(run=run))
    return future


def test_the_rechecks_statuses_land_in_the_records_they_check() -> None:
    failing = _record("fail", prop="prop.a")
    outcomes = _outcomes(_run(failing, _record("pass", prop="prop.b")), _run(failing))
    answers = {"parent": _record("pass", prop="prop.a"), "patch": _record("fail", prop="prop.a")}
    asked: list[str] = []

    def submit(unit: RunUnit) -> Future[RunOutcome]:
        asked.append(unit.tree_name)
        return _answered(_run(answers[unit.tree_name]))

    done = recheck(UNITS, outcomes, submit)
    assert asked == ["parent", "patch"]
    assert [r.recheck for r in done[("parent", 11)].run.records] == ["pass", ""]
    assert [r.recheck for r in done[("patch", 11)].run.records] == ["fail"]


def test_a_failure_that_is_red_in_process_on_the_parent_is_not_run_on_the_patch() -> None:
    """The bug a lazy patch leaves fails in-process on the parent too: nothing to believe,
    and the patch's recheck is not run (the attack suite's lazy patches cost one parent
    recheck per seed, shared by a batch)."""
    failing = _record("fail", prop="prop.a")
    outcomes = _outcomes(_run(failing), _run(failing))
    asked: list[str] = []

    def submit(unit: RunUnit) -> Future[RunOutcome]:
        asked.append(unit.tree_name)
        return _answered(_run(failing))

    done = recheck(UNITS, outcomes, submit)
    assert asked == ["parent"]
    assert [r.recheck for r in done[("parent", 11)].run.records] == ["fail"]
    assert done[("patch", 11)] == outcomes[("patch", 11)]
    # a recheck that does not complete, or errs, leaves the records as they were
    broken: Future[RunOutcome] = Future()
    broken.set_exception(RuntimeError("the sandbox could not start"))
    assert recheck(UNITS, outcomes, lambda unit: broken)[("parent", 11)] == outcomes[("parent", 11)]
    incomplete = recheck(
        UNITS,
        outcomes,
        lambda unit: _answered(_run(_record("pass", prop="prop.a"), complete=False)),
    )
    assert incomplete == outcomes
