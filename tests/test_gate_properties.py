"""Property-based invariants of the differential gate (docs/design/differential-gate.md).

Contracts and both sides' rows are generated: mostly well-formed runs (so
every table row is reached), with dropped, reordered, duplicated and extra
seeds, odd statuses, noisy witnesses, mixed hashes and foreign rows mixed in.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from patchwarden.scorer import (
    Contract,
    GateResult,
    RunRow,
    SkipReason,
    combine,
    decide,
    dump_rows,
    normalise_witness,
    parse_contract,
    parse_rows,
    read_rows,
)

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

PROPS = ["prop.a", "prop.b", "prop.c"]
SEED_POOL = [3, 11, 29, 47, 53]
OUTSIDE_SEED = 999  # never in a generated schedule
SPECS = ["sha256:" + "a" * 64, "sha256:" + "b" * 64]
FIXES = ["sha256:" + "c" * 64, "sha256:" + "d" * 64]
FOREIGN = "sha256:" + "f" * 64
# one failure class under run-to-run noise, and other classes
NOISY_CLASS = [
    "AssertionError:total <Order at 0x7f00aa> pid=42 took 0.5s",
    "AssertionError:total <Order at 0x55d1e0> pid=4242 took 12ms",
    "AssertionError:total <Order at 0x1> pid=7 took 3 s",
]
WITNESSES = [*NOISY_CLASS, "KeyError:lines", "AssertionError:total", ""]
ODD_STATUSES = ["PASS", "error", "skipped", ""]


# ------------------------------------------------------------------ strategies


@st.composite
def contracts(draw: st.DrawFn) -> Contract:
    data: dict[str, Any] = {
        "seeds": draw(st.lists(st.sampled_from(SEED_POOL), min_size=1, max_size=3, unique=True))
    }
    if draw(st.booleans()):
        ids = draw(st.lists(st.sampled_from(PROPS), min_size=1, max_size=3, unique=True))
        data["properties"] = [{"id": p, "test": f"tests/p.py::test_{n}"} for n, p in enumerate(ids)]
    if draw(st.integers(0, 3)) == 0:
        data["spec_hash"] = draw(st.sampled_from(SPECS))
    if draw(st.integers(0, 3)) == 0:
        data["fixture_closure_hash"] = draw(st.sampled_from(FIXES))
    return parse_contract(json.dumps(data), "contract.json")


def _rare(draw: st.DrawFn, one_in: int) -> bool:
    return draw(st.integers(0, one_in - 1)) == 0


@st.composite
def side_rows(
    draw: st.DrawFn, contract: Contract, props: list[str], spec: str | None, fix: str | None
) -> list[RunRow]:
    """One side's rows: per property the schedule, sometimes mangled."""
    rows: list[RunRow] = []
    for prop in props:
        if _rare(draw, 12):
            continue  # the whole property is missing on this side
        seeds = list(contract.seeds)
        mangle = draw(st.sampled_from(["none"] * 12 + ["drop", "swap", "dup", "extra"]))
        if mangle == "drop":
            del seeds[draw(st.integers(0, len(seeds) - 1))]
        elif mangle == "swap" and len(seeds) > 1:
            seeds[0], seeds[-1] = seeds[-1], seeds[0]
        elif mangle == "dup":
            seeds.insert(draw(st.integers(0, len(seeds))), draw(st.sampled_from(seeds)))
        elif mangle == "extra":
            seeds.append(OUTSIDE_SEED)
        mode = draw(st.sampled_from(["pass", "fail", "mixed"]))
        witnesses = WITNESSES if _rare(draw, 4) else NOISY_CLASS
        contract_hash = draw(st.sampled_from([None, contract.contract_hash]))
        # at most one odd row per (property, side): an odd status or a stray hash
        odd_index = draw(st.integers(0, 6 * len(seeds)))
        odd_kind = draw(st.sampled_from(["status", "spec", "fix"]))
        for index, seed in enumerate(seeds):
            odd = index == odd_index
            if odd and odd_kind == "status":
                status = draw(st.sampled_from(ODD_STATUSES))
            elif mode == "mixed":
                status = draw(st.sampled_from(["pass", "fail"]))
            else:
                status = mode
            rows.append(
                RunRow(
                    prop=prop,
                    seed=seed,
                    status=status,
                    witness=draw(st.sampled_from(witnesses)) if status != "pass" else "",
                    contract_hash=contract_hash,
                    spec_hash=draw(st.sampled_from(SPECS)) if odd and odd_kind == "spec" else spec,
                    fixture_closure_hash=(
                        draw(st.sampled_from(FIXES)) if odd and odd_kind == "fix" else fix
                    ),
                )
            )
    return rows


@st.composite
def foreign_rows(draw: st.DrawFn) -> list[RunRow]:
    return draw(
        st.lists(
            st.builds(
                RunRow,
                prop=st.sampled_from([*PROPS, "prop.zzz"]),
                seed=st.sampled_from([*SEED_POOL, OUTSIDE_SEED]),
                status=st.sampled_from(["pass", "fail", *ODD_STATUSES]),
                witness=st.sampled_from(WITNESSES),
                contract_hash=st.just(FOREIGN),
            ),
            min_size=1,
            max_size=6,
        )
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Contract, list[RunRow], list[RunRow]]:
    contract = draw(contracts())
    # per-tree hashes: usually the pin (or nothing), sometimes differing trees
    spec_choices = [contract.spec_hash] if contract.spec_hash else [None, None, *SPECS]
    fix_choices = (
        [contract.fixture_closure_hash] if contract.fixture_closure_hash else [None, None, *FIXES]
    )
    parent_spec = draw(st.sampled_from(spec_choices))
    parent_fix = draw(st.sampled_from(fix_choices))
    patch_spec = parent_spec if not _rare(draw, 6) else draw(st.sampled_from(spec_choices))
    patch_fix = parent_fix if not _rare(draw, 6) else draw(st.sampled_from(fix_choices))
    if contract.properties:
        props = contract.property_ids()
        if _rare(draw, 5):
            props = [*props, "prop.stray"]  # not in the contract: ignored
    else:
        props = draw(
            st.lists(st.sampled_from(PROPS), min_size=_rare(draw, 10) ^ 1, max_size=3, unique=True)
        )
    parent = draw(side_rows(contract, props, parent_spec, parent_fix))
    patch = draw(side_rows(contract, props, patch_spec, patch_fix))
    if _rare(draw, 4):
        parent = _interleave(draw, parent, draw(foreign_rows()))
    if _rare(draw, 4):
        patch = _interleave(draw, patch, draw(foreign_rows()))
    return contract, parent, patch


def _interleave(draw: st.DrawFn, rows: list[RunRow], extra: list[RunRow]) -> list[RunRow]:
    out = list(rows)
    for row in extra:
        out.insert(draw(st.integers(0, len(out))), row)
    return out


# ------------------------------------------------------------------ an independent oracle


def is_kept(row: RunRow, contract: Contract) -> bool:
    """docs/design/runner.md: rows whose hashes differ from the resolved contract are
    ignored; with a property list, rows of other properties are too."""
    if contract.properties and row.prop not in contract.property_ids():
        return False
    if row.contract_hash is not None and row.contract_hash != contract.contract_hash:
        return False
    if contract.spec_hash and row.spec_hash not in (None, contract.spec_hash):
        return False
    return not (
        contract.fixture_closure_hash
        and row.fixture_closure_hash not in (None, contract.fixture_closure_hash)
    )


def expected(
    schedule: Sequence[int], p: Sequence[RunRow], c: Sequence[RunRow]
) -> tuple[str, str | None]:
    """docs/design/differential-gate.md per property: (decision, reason when the table fixes it)."""
    for rows in (p, c):
        if set(schedule) - {r.seed for r in rows}:
            return "reject", "missing_seed"
    for rows in (p, c):
        if [r.seed for r in rows] != list(schedule):
            return "reject", "schedule_mismatch"
    if any(r.status not in ("pass", "fail") for r in [*p, *c]):
        return "reject", "invalid_status"
    parent_fails = any(r.status == "fail" for r in p)
    patch_fails = any(r.status == "fail" for r in c)
    if not patch_fails:
        return "accept", ("parent_fail_cleared" if parent_fails else "both_pass")
    if not parent_fails:
        return "reject", "regression"
    seven = (
        len({r.spec_hash for r in [*p, *c]}) == 1
        and len({r.fixture_closure_hash for r in [*p, *c]}) == 1
        and {normalise_witness(r.witness) for r in p if r.status == "fail"}
        == {normalise_witness(r.witness) for r in c if r.status == "fail"}
        and (len({r.status for r in p}) > 1 or len({r.status for r in c}) > 1)
    )
    if seven:
        return "propose_freeze", "shared_variant_fail"
    return "reject", None


def _prop_rows(rows: Sequence[RunRow], prop: str, contract: Contract) -> list[RunRow]:
    return [r for r in rows if r.prop == prop and is_kept(r, contract)]


def check_against_oracle(
    contract: Contract, parent: list[RunRow], patch: list[RunRow], result: GateResult
) -> None:
    kept_parent = [r for r in parent if is_kept(r, contract)]
    kept_patch = [r for r in patch if is_kept(r, contract)]
    for side, rows, kept in (("parent", parent, kept_parent), ("patch", patch, kept_patch)):
        counts = result.counts[side]
        assert counts.lines == len(rows)
        assert counts.ignored == len(rows) - len(kept)
        assert counts.pass_ == sum(r.status == "pass" for r in kept)
        assert counts.fail == sum(r.status == "fail" for r in kept)
    assert result.contract_hash == contract.contract_hash
    if result.decision == "skipped":
        assert result.results == []
        assert result.skip_reason in {"spec_hash_differs", "fixture_hash_differs"}
        attr = "spec_hash" if result.skip_reason == "spec_hash_differs" else "fixture_closure_hash"
        ours = {getattr(r, attr) for r in kept_parent} - {None}
        theirs = {getattr(r, attr) for r in kept_patch} - {None}
        assert ours
        assert theirs
        assert ours != theirs
        return
    assert result.skip_reason == ""
    for attr in ("spec_hash", "fixture_closure_hash"):
        ours = {getattr(r, attr) for r in kept_parent} - {None}
        theirs = {getattr(r, attr) for r in kept_patch} - {None}
        assert not ours or not theirs or ours == theirs, f"trees' {attr} differ but gate ran"
    assert result.results, "an empty verdict proves nothing"
    assert result.decision == combine(result.results)
    props = contract.property_ids() or list(
        dict.fromkeys(r.prop for r in [*kept_parent, *kept_patch])
    )
    if not props:
        assert result.decision == "reject"
        assert {r.reason for r in result.results} == {"missing_seed"}
        return
    assert [r.prop for r in result.results] == props
    for res in result.results:
        decision, reason = expected(
            contract.seeds,
            _prop_rows(parent, res.prop, contract),
            _prop_rows(patch, res.prop, contract),
        )
        assert res.decision == decision, (res, reason)
        if reason is not None:
            assert res.reason == reason, res


# ------------------------------------------------------------------ invariants


@SETTINGS
@given(scenarios())
def test_decision_never_raises_and_matches_the_table(
    scenario: tuple[Contract, list[RunRow], list[RunRow]],
) -> None:
    contract, parent, patch = scenario
    result = decide(contract, parent, patch)
    assert result.decision in {"accept", "reject", "propose_freeze", "skipped"}
    check_against_oracle(contract, parent, patch, result)


@SETTINGS
@given(scenarios())
def test_propose_freeze_only_from_split_pairs(
    scenario: tuple[Contract, list[RunRow], list[RunRow]],
) -> None:
    contract, parent, patch = scenario
    result = decide(contract, parent, patch)
    for res in result.results:
        if res.decision != "propose_freeze":
            continue
        p = _prop_rows(parent, res.prop, contract)
        c = _prop_rows(patch, res.prop, contract)
        assert len({r.status for r in p}) > 1 or len({r.status for r in c}) > 1
        assert any(r.status == "fail" for r in p)
        assert any(r.status == "fail" for r in c)


def _removable(contract: Contract, rows: list[RunRow], index: int, other: list[RunRow]) -> bool:
    """A removal that can only make a run less complete: the row is kept, its
    seed is scheduled, it is the only row for its (property, seed) on its
    side, and (seeds-only contract) its property keeps some row somewhere."""
    row = rows[index]
    if not is_kept(row, contract) or row.seed not in contract.seeds:
        return False
    if (
        sum(1 for r in rows if r.prop == row.prop and r.seed == row.seed and is_kept(r, contract))
        != 1
    ):
        return False
    if contract.properties:
        return True
    rest = [r for i, r in enumerate(rows) if i != index] + other
    return any(r.prop == row.prop and is_kept(r, contract) for r in rest)


@SETTINGS
@given(scenarios())
def test_removing_a_row_never_helps(scenario: tuple[Contract, list[RunRow], list[RunRow]]) -> None:
    contract, parent, patch = scenario
    before = decide(contract, parent, patch).decision
    for which in ("parent", "patch"):
        rows, other = (parent, patch) if which == "parent" else (patch, parent)
        for index in range(len(rows)):
            fewer = rows[:index] + rows[index + 1 :]
            args = (fewer, patch) if which == "parent" else (parent, fewer)
            after = decide(contract, *args)
            if not is_kept(rows[index], contract):
                # an ignored row changes nothing but the counts
                assert after.decision == before
                continue
            if not _removable(contract, rows, index, other):
                continue
            # a missing scheduled row is an incomplete run: never accept
            assert after.decision in {"reject", "skipped"}, (which, rows[index], after)
            if before != "accept":
                assert after.decision != "accept"


@st.composite
def regression_cases(draw: st.DrawFn) -> tuple[Contract, list[RunRow], list[RunRow], str]:
    contract, parent, patch = draw(scenarios())
    prop = draw(st.sampled_from(contract.property_ids() or [*PROPS, "prop.new"]))
    parent = [r for r in parent if r.prop != prop]
    patch = [r for r in patch if r.prop != prop]
    fails = draw(
        st.lists(st.booleans(), min_size=len(contract.seeds), max_size=len(contract.seeds)).filter(
            any
        )
    )
    witness = draw(st.sampled_from(WITNESSES))
    parent += [RunRow(prop=prop, seed=s, status="pass") for s in contract.seeds]
    patch += [
        RunRow(prop=prop, seed=s, status="fail" if f else "pass", witness=witness if f else "")
        for s, f in zip(contract.seeds, fails, strict=True)
    ]
    return contract, parent, patch, prop


@SETTINGS
@given(regression_cases())
def test_a_regression_always_rejects_the_patch(
    case: tuple[Contract, list[RunRow], list[RunRow], str],
) -> None:
    contract, parent, patch, prop = case
    result = decide(contract, parent, patch)
    assert result.decision not in {"accept", "propose_freeze"}
    if result.decision == "skipped":
        # only a tree-hash disagreement elsewhere may skip the gate
        assert result.skip_reason in {"spec_hash_differs", "fixture_hash_differs"}
        return
    assert result.decision == "reject"
    mine = [r for r in result.results if r.prop == prop]
    assert [(r.decision, r.reason) for r in mine] == [("reject", "regression")]


@SETTINGS
@given(scenarios(), foreign_rows(), foreign_rows(), st.data())
def test_foreign_rows_do_not_change_the_decision(
    scenario: tuple[Contract, list[RunRow], list[RunRow]],
    extra_parent: list[RunRow],
    extra_patch: list[RunRow],
    data: st.DataObject,
) -> None:
    contract, parent, patch = scenario
    base = decide(contract, parent, patch)
    more_parent = _interleave(data.draw, parent, extra_parent)
    more_patch = _interleave(data.draw, patch, extra_patch)
    with_foreign = decide(contract, more_parent, more_patch)
    assert with_foreign.decision == base.decision
    assert with_foreign.results == base.results
    assert with_foreign.skip_reason == base.skip_reason
    for side, extra in (("parent", extra_parent), ("patch", extra_patch)):
        b, f = base.counts[side], with_foreign.counts[side]
        assert f.lines == b.lines + len(extra)
        assert f.ignored == b.ignored + len(extra)
        assert (f.pass_, f.fail) == (b.pass_, b.fail)


@SETTINGS
@given(scenarios(), st.sampled_from([None, *SkipReason]))
def test_gate_result_json_round_trip(
    scenario: tuple[Contract, list[RunRow], list[RunRow]], skip: SkipReason | None
) -> None:
    contract, parent, patch = scenario
    result = decide(contract, parent, patch, skip_reason=skip)
    again = GateResult.model_validate_json(result.model_dump_json())
    assert again == result
    assert again.to_json() == result.to_json()
    assert json.loads(json.dumps(result.to_json())) == result.to_json()


ROW_TEXT = st.text(max_size=40)


@st.composite
def any_rows(draw: st.DrawFn) -> RunRow:
    optional = st.none() | ROW_TEXT
    return RunRow(
        prop=draw(st.text(min_size=1, max_size=20)),
        seed=draw(st.integers(min_value=-(2**63), max_value=2**64)),
        status=draw(st.sampled_from(["pass", "fail", *ODD_STATUSES]) | ROW_TEXT),
        witness=draw(ROW_TEXT),
        tree=draw(st.none() | st.sampled_from(["parent", "patch"])),
        sha=draw(optional),
        contract_hash=draw(optional),
        spec_hash=draw(optional),
        fixture_closure_hash=draw(optional),
        duration_s=draw(st.none() | st.floats(allow_nan=False, allow_infinity=False)),
    )


@SETTINGS
@given(any_rows())
def test_run_row_json_round_trip(row: RunRow) -> None:
    assert RunRow.model_validate_json(row.model_dump_json()) == row


@SETTINGS
@given(st.lists(any_rows(), max_size=5))
@example([RunRow(prop="p", seed=1, status="fail", witness="line\u2028separator")])
@example([RunRow(prop="p", seed=1, status="fail", witness="next\x85line")])
def test_rows_dump_parse_round_trip(rows: list[RunRow]) -> None:
    """What the scorer saves must read back identically, line for line."""
    text = dump_rows(rows)
    assert parse_rows(text.split("\n"), "rows.jsonl") == rows
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        path.write_text(text, encoding="utf-8")
        assert read_rows(path) == rows


@SETTINGS
@given(scenarios())
def test_row_order_across_properties_does_not_matter(
    scenario: tuple[Contract, list[RunRow], list[RunRow]],
) -> None:
    """Only each property's own order is its schedule: a stable regroup of
    the rows by property gives the same decision."""
    contract, parent, patch = scenario
    base = decide(contract, parent, patch)

    def regroup(rows: list[RunRow]) -> list[RunRow]:
        order = Counter(r.prop for r in rows)
        return sorted(rows, key=lambda r: (-order[r.prop], r.prop))

    again = decide(contract, regroup(parent), regroup(patch))
    assert again.decision == base.decision
    assert again.skip_reason == base.skip_reason
    assert sorted(again.results, key=lambda r: r.prop) == sorted(base.results, key=lambda r: r.prop)
