"""The differential gate, table-driven against docs/design/differential-gate.md.

Every case asserts the exact decision and reason code. Rows are built with
``RunRow`` directly; contracts come from ``parse_contract`` so that their
``contract_hash`` is the real one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from patchwarden.scorer import (
    Contract,
    GateResult,
    PropertyResult,
    Reason,
    RunRow,
    SkipReason,
    combine,
    decide,
    decide_property,
    normalise_witness,
    parse_contract,
    review_note,
)

PROP = "prop.order_total_non_negative"
OTHER = "prop.order_lines_sum"
W = f"{PROP}|AssertionError|tests/properties/test_orders.py:12"
W2 = f"{PROP}|AssertionError|tests/properties/test_orders.py:19"
SPEC1 = "sha256:" + "a" * 64
SPEC2 = "sha256:" + "b" * 64
FIX = "sha256:" + "c" * 64
FIX2 = "sha256:" + "d" * 64
SCHEDULE = [11, 29, 47]


def make_contract(seeds: Sequence[int] = SCHEDULE, **extra: Any) -> Contract:
    return parse_contract(json.dumps({"seeds": list(seeds), **extra}), "contract.json")


def with_props(*ids: str, seeds: Sequence[int] = SCHEDULE, **extra: Any) -> Contract:
    props = [{"id": i, "test": f"tests/properties/test_x.py::test_{n}"} for n, i in enumerate(ids)]
    return make_contract(seeds, properties=props, **extra)


def side(
    spec: str,
    seeds: Sequence[int] = SCHEDULE,
    *,
    prop: str = PROP,
    witness: str = W,
    **fields: Any,
) -> list[RunRow]:
    """Rows for one property on one side; ``spec`` is one char per seed:
    ``.`` pass, ``F`` fail, or a literal status after ``=`` for odd ones."""
    assert len(spec) == len(seeds), (spec, seeds)
    rows = []
    for char, seed in zip(spec, seeds, strict=True):
        status = {".": "pass", "F": "fail"}[char]
        rows.append(
            RunRow(
                prop=prop,
                seed=seed,
                status=status,
                witness=witness if status == "fail" else "",
                **fields,
            )
        )
    return rows


def row(seed: int, status: str, *, prop: str = PROP, witness: str = W, **fields: Any) -> RunRow:
    return RunRow(prop=prop, seed=seed, status=status, witness=witness, **fields)


# --------------------------------------------------------------------------
# The docs/design/differential-gate.md table, one property at a time (decide_property).
# --------------------------------------------------------------------------

TABLE: list[tuple[str, list[RunRow], list[RunRow], str, Reason]] = [
    # a seed row missing on either side
    (
        "missing-on-parent",
        side("..", [11, 29]),
        side("...", SCHEDULE),
        "reject",
        Reason.MISSING_SEED,
    ),
    (
        "missing-on-patch",
        side("...", SCHEDULE),
        side(".F", [11, 47]),
        "reject",
        Reason.MISSING_SEED,
    ),
    ("missing-both", side(".", [11]), side(".", [47]), "reject", Reason.MISSING_SEED),
    ("parent-empty", [], side("...", SCHEDULE), "reject", Reason.MISSING_SEED),
    ("patch-empty", side("...", SCHEDULE), [], "reject", Reason.MISSING_SEED),
    ("both-empty", [], [], "reject", Reason.MISSING_SEED),
    # missing wins over a would-be regression or freeze
    (
        "missing-with-regression",
        side("...", SCHEDULE),
        side("FF", [11, 29]),
        "reject",
        Reason.MISSING_SEED,
    ),
    (
        "missing-with-dupe",
        side("...", SCHEDULE),
        side("...", [11, 11, 29]),
        "reject",
        Reason.MISSING_SEED,
    ),
    # schedule differs from the contract
    (
        "order-parent",
        side("...", [29, 11, 47]),
        side("...", SCHEDULE),
        "reject",
        Reason.SCHEDULE_MISMATCH,
    ),
    (
        "order-patch",
        side("...", SCHEDULE),
        side("...", [11, 47, 29]),
        "reject",
        Reason.SCHEDULE_MISMATCH,
    ),
    (
        "count-extra-seed",
        side("...", SCHEDULE),
        side("....", [*SCHEDULE, 53]),
        "reject",
        Reason.SCHEDULE_MISMATCH,
    ),
    (
        "duplicate-parent",
        side("....", [11, 29, 29, 47]),
        side("...", SCHEDULE),
        "reject",
        Reason.SCHEDULE_MISMATCH,
    ),
    (
        "duplicate-patch",
        side("...", SCHEDULE),
        side("....", [11, 29, 47, 47]),
        "reject",
        Reason.SCHEDULE_MISMATCH,
    ),
    (
        "duplicate-conflicting",
        side("...", SCHEDULE),
        side("F...", [11, 11, 29, 47]),
        "reject",
        Reason.SCHEDULE_MISMATCH,
    ),
    # the accept rows
    ("both-pass", side("...", SCHEDULE), side("...", SCHEDULE), "accept", Reason.BOTH_PASS),
    (
        "regression-one-seed",
        side("...", SCHEDULE),
        side(".F.", SCHEDULE),
        "reject",
        Reason.REGRESSION,
    ),
    (
        "regression-all-seeds",
        side("...", SCHEDULE),
        side("FFF", SCHEDULE),
        "reject",
        Reason.REGRESSION,
    ),
    (
        "parent-fail-cleared-split",
        side("F..", SCHEDULE),
        side("...", SCHEDULE),
        "accept",
        Reason.PARENT_FAIL_CLEARED,
    ),
    (
        "parent-fail-cleared-uniform",
        side("FFF", SCHEDULE),
        side("...", SCHEDULE),
        "accept",
        Reason.PARENT_FAIL_CLEARED,
    ),
    # both fail
    (
        "witness-mismatch",
        side("F..", SCHEDULE),
        side("F..", SCHEDULE, witness=W2),
        "reject",
        Reason.WITNESS_MISMATCH,
    ),
    ("uniform-fail", side("FFF", SCHEDULE), side("FFF", SCHEDULE), "reject", Reason.UNIFORM_FAIL),
    (
        "shared-variant-parent-split",
        side("F..", SCHEDULE),
        side("FFF", SCHEDULE),
        "propose_freeze",
        Reason.SHARED_VARIANT_FAIL,
    ),
    (
        "shared-variant-patch-split",
        side("FFF", SCHEDULE),
        side(".F.", SCHEDULE),
        "propose_freeze",
        Reason.SHARED_VARIANT_FAIL,
    ),
    (
        "shared-variant-both-split",
        side("F.F", SCHEDULE),
        side(".FF", SCHEDULE),
        "propose_freeze",
        Reason.SHARED_VARIANT_FAIL,
    ),
]


@pytest.mark.parametrize(
    ("parent", "patch", "decision", "reason"),
    [case[1:] for case in TABLE],
    ids=[case[0] for case in TABLE],
)
def test_section5_table(
    parent: list[RunRow], patch: list[RunRow], decision: str, reason: Reason
) -> None:
    assert decide_property(SCHEDULE, parent, patch) == (decision, reason)


@pytest.mark.parametrize("status", ["PASS", "Fail", "error", "skipped", "xfail", "", " pass"])
@pytest.mark.parametrize("where", ["parent", "patch"])
@pytest.mark.parametrize("others", ["...", "FFF"])
def test_invalid_status(status: str, where: str, others: str) -> None:
    odd = [row(11, status), *side(others[1:], SCHEDULE[1:])]
    good = side(others, SCHEDULE)
    parent, patch = (odd, good) if where == "parent" else (good, odd)
    assert decide_property(SCHEDULE, parent, patch) == ("reject", Reason.INVALID_STATUS)


@pytest.mark.parametrize("status", ["PASS", "error", "skipped", ""])
def test_invalid_status_through_decide(status: str) -> None:
    contract = make_contract()
    patch = [*side("..", SCHEDULE[:2]), row(SCHEDULE[2], status)]
    result = decide(contract, side("...", SCHEDULE), patch)
    assert result.decision == "reject"
    assert result.results == [PropertyResult(prop=PROP, decision="reject", reason="invalid_status")]


# --------------------------------------------------------------------------
# The seven conditions: each one failing on its own while the other six hold.
# --------------------------------------------------------------------------

FREEZE_SEEDS = [11, 29]


def freeze_base(**overrides: Any) -> tuple[list[RunRow], list[RunRow]]:
    """Parent: 11 fail, 29 pass; patch: 11 and 29 fail; same hashes, same witness."""
    hashes = {"spec_hash": SPEC1, "fixture_closure_hash": FIX}
    parent = side("F.", FREEZE_SEEDS, **hashes)
    patch = side("FF", FREEZE_SEEDS, **hashes)
    return parent, patch


def test_all_seven_hold_is_propose_freeze() -> None:
    parent, patch = freeze_base()
    assert decide_property(FREEZE_SEEDS, parent, patch) == (
        "propose_freeze",
        Reason.SHARED_VARIANT_FAIL,
    )
    result = decide(make_contract(FREEZE_SEEDS), parent, patch)
    assert result.decision == "propose_freeze"
    assert result.skip_reason == ""
    assert result.results == [
        PropertyResult(prop=PROP, decision="propose_freeze", reason="shared_variant_fail")
    ]


def _replace(rows: list[RunRow], index: int, **update: Any) -> list[RunRow]:
    out = list(rows)
    out[index] = out[index].model_copy(update=update)
    return out


def cond_spec_hash_within_parent() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return _replace(parent, 1, spec_hash=SPEC2), patch


def cond_spec_hash_within_patch() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return parent, _replace(patch, 0, spec_hash=SPEC2)


def cond_spec_hash_between_sides() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return parent, [r.model_copy(update={"spec_hash": SPEC2}) for r in patch]


def cond_spec_hash_missing_one_side() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return parent, [r.model_copy(update={"spec_hash": None}) for r in patch]


def cond_fixture_within_patch() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return parent, _replace(patch, 1, fixture_closure_hash=FIX2)


def cond_fixture_between_sides() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return [r.model_copy(update={"fixture_closure_hash": FIX2}) for r in parent], patch


def cond_schedule_order() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return parent, list(reversed(patch))


def cond_schedule_count() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return parent, [*patch, patch[1].model_copy(update={"seed": 53})]


def cond_schedule_duplicate() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return [*parent, parent[0]], patch


def cond_parent_passes() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return [r.model_copy(update={"status": "pass", "witness": ""}) for r in parent], patch


def cond_patch_passes() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return parent, [r.model_copy(update={"status": "pass", "witness": ""}) for r in patch]


def cond_witness_differs_one_row() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return parent, _replace(patch, 1, witness=W2)


def cond_witness_differs_exception_type() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    other = W.replace("AssertionError", "ZeroDivisionError")
    return parent, [r.model_copy(update={"witness": other}) for r in patch]


def cond_not_split() -> tuple[list[RunRow], list[RunRow]]:
    parent, patch = freeze_base()
    return [r.model_copy(update={"status": "fail", "witness": W}) for r in parent], patch


SEVEN = [
    ("spec-hash-within-parent", cond_spec_hash_within_parent, "reject", Reason.SPEC_HASH_MISMATCH),
    ("spec-hash-within-patch", cond_spec_hash_within_patch, "reject", Reason.SPEC_HASH_MISMATCH),
    ("spec-hash-between-sides", cond_spec_hash_between_sides, "reject", Reason.SPEC_HASH_MISMATCH),
    (
        "spec-hash-absent-one-side",
        cond_spec_hash_missing_one_side,
        "reject",
        Reason.SPEC_HASH_MISMATCH,
    ),
    ("fixture-within-patch", cond_fixture_within_patch, "reject", Reason.FIXTURE_HASH_MISMATCH),
    ("fixture-between-sides", cond_fixture_between_sides, "reject", Reason.FIXTURE_HASH_MISMATCH),
    ("schedule-order", cond_schedule_order, "reject", Reason.SCHEDULE_MISMATCH),
    ("schedule-count", cond_schedule_count, "reject", Reason.SCHEDULE_MISMATCH),
    ("schedule-duplicate", cond_schedule_duplicate, "reject", Reason.SCHEDULE_MISMATCH),
    ("parent-does-not-fail", cond_parent_passes, "reject", Reason.REGRESSION),
    ("patch-does-not-fail", cond_patch_passes, "accept", Reason.PARENT_FAIL_CLEARED),
    ("witness-one-row-differs", cond_witness_differs_one_row, "reject", Reason.WITNESS_MISMATCH),
    (
        "witness-exception-type",
        cond_witness_differs_exception_type,
        "reject",
        Reason.WITNESS_MISMATCH,
    ),
    ("not-split", cond_not_split, "reject", Reason.UNIFORM_FAIL),
]


@pytest.mark.parametrize(
    ("build", "decision", "reason"), [c[1:] for c in SEVEN], ids=[c[0] for c in SEVEN]
)
def test_one_condition_fails(build: Any, decision: str, reason: Reason) -> None:
    parent, patch = build()
    assert decide_property(FREEZE_SEEDS, parent, patch) == (decision, reason)


HASH_CASES = {
    "spec-hash-within-parent",
    "spec-hash-within-patch",
    "spec-hash-between-sides",
    "spec-hash-absent-one-side",
    "fixture-within-patch",
    "fixture-between-sides",
}


@pytest.mark.parametrize(
    ("build", "decision", "reason"),
    [c[1:] for c in SEVEN if c[0] not in HASH_CASES],
    ids=[c[0] for c in SEVEN if c[0] not in HASH_CASES],
)
def test_one_condition_fails_through_decide(build: Any, decision: str, reason: Reason) -> None:
    parent, patch = build()
    result = decide(make_contract(FREEZE_SEEDS), parent, patch)
    assert result.skip_reason == ""
    assert result.results == [PropertyResult(prop=PROP, decision=decision, reason=reason.value)]
    assert result.decision == decision


@pytest.mark.parametrize(
    ("field", "other", "reason"),
    [
        ("spec_hash", SPEC2, "spec_hash_mismatch"),
        ("fixture_closure_hash", FIX2, "fixture_hash_mismatch"),
    ],
)
def test_hash_mixed_within_property_through_decide(field: str, other: str, reason: str) -> None:
    """Both trees carry the same set of hashes (so the gate is not skipped),
    but within the property's rows the hash is not one value: reject."""
    parent, patch = freeze_base()
    parent = _replace(parent, 1, **{field: other})
    patch = _replace(patch, 1, **{field: other})
    result = decide(make_contract(FREEZE_SEEDS), parent, patch)
    assert result.skip_reason == ""
    assert result.decision == "reject"
    assert result.results == [PropertyResult(prop=PROP, decision="reject", reason=reason)]


def test_hash_absent_on_one_side_through_decide() -> None:
    parent, patch = cond_spec_hash_missing_one_side()
    result = decide(make_contract(FREEZE_SEEDS), parent, patch)
    assert result.decision == "reject"
    assert result.results == [
        PropertyResult(prop=PROP, decision="reject", reason="spec_hash_mismatch")
    ]


# --------------------------------------------------------------------------
# Schedule details and missing seeds through decide().
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "patch_seeds",
    [[29, 11, 47], [47, 29, 11], [11, 29, 47, 47], [11, 11, 29, 47], [11, 29, 47, 5]],
    ids=["swap", "reverse", "dup-last", "dup-first", "extra"],
)
def test_schedule_mismatch_via_decide(patch_seeds: list[int]) -> None:
    result = decide(
        make_contract(), side("...", SCHEDULE), side("." * len(patch_seeds), patch_seeds)
    )
    assert result.decision == "reject"
    assert result.results == [
        PropertyResult(prop=PROP, decision="reject", reason="schedule_mismatch")
    ]


@pytest.mark.parametrize("missing", SCHEDULE)
@pytest.mark.parametrize("where", ["parent", "patch"])
def test_missing_seed_each_position(missing: int, where: str) -> None:
    seeds = [s for s in SCHEDULE if s != missing]
    short = side("..", seeds)
    full = side("...", SCHEDULE)
    parent, patch = (short, full) if where == "parent" else (full, short)
    result = decide(make_contract(), parent, patch)
    assert result.decision == "reject"
    assert result.results == [PropertyResult(prop=PROP, decision="reject", reason="missing_seed")]
    assert result.counts[where].lines == 2


def test_property_missing_entirely_on_one_side() -> None:
    contract = with_props(PROP, OTHER)
    parent = side("...", SCHEDULE) + side("...", SCHEDULE, prop=OTHER)
    patch = side("...", SCHEDULE)
    result = decide(contract, parent, patch)
    assert result.decision == "reject"
    assert result.results == [
        PropertyResult(prop=PROP, decision="accept", reason="both_pass"),
        PropertyResult(prop=OTHER, decision="reject", reason="missing_seed"),
    ]


def test_contract_property_with_no_rows_anywhere_is_missing() -> None:
    contract = with_props(PROP, OTHER)
    both = side("...", SCHEDULE)
    result = decide(contract, both, both)
    assert result.decision == "reject"
    assert result.results[1] == PropertyResult(prop=OTHER, decision="reject", reason="missing_seed")


@pytest.mark.parametrize(
    "contract", [make_contract(), with_props(PROP)], ids=["seeds-only", "props"]
)
def test_empty_rows_reject_missing_seed(contract: Contract) -> None:
    result = decide(contract, [], [])
    assert result.decision == "reject"
    assert result.skip_reason == ""
    assert result.results
    assert {r.reason for r in result.results} == {"missing_seed"}
    assert {r.decision for r in result.results} == {"reject"}
    assert result.counts["parent"].lines == 0
    assert result.counts["patch"].lines == 0


def test_empty_patch_rows_reject_missing_seed() -> None:
    result = decide(make_contract(), side("...", SCHEDULE), [])
    assert result.decision == "reject"
    assert result.results == [PropertyResult(prop=PROP, decision="reject", reason="missing_seed")]


def test_combine_of_nothing_is_reject() -> None:
    assert combine([]) == "reject"


# --------------------------------------------------------------------------
# Foreign rows: ignored, so they count as missing, and counted as ignored.
# --------------------------------------------------------------------------


def test_foreign_contract_hash_rows_are_ignored() -> None:
    contract = make_contract()
    foreign = "sha256:" + "9" * 64
    assert contract.contract_hash != foreign
    parent = side("...", SCHEDULE, contract_hash=contract.contract_hash)
    patch = side("...", SCHEDULE, contract_hash=foreign)
    result = decide(contract, parent, patch)
    assert result.decision == "reject"
    assert result.results == [PropertyResult(prop=PROP, decision="reject", reason="missing_seed")]
    assert result.counts["patch"].to_json() == {"lines": 3, "pass": 0, "fail": 0, "ignored": 3}
    assert result.counts["parent"].to_json() == {"lines": 3, "pass": 3, "fail": 0, "ignored": 0}


def test_one_foreign_row_makes_its_seed_missing() -> None:
    contract = make_contract()
    patch = side("...", SCHEDULE, contract_hash=contract.contract_hash)
    patch = _replace(patch, 1, contract_hash="sha256:other")
    result = decide(contract, side("...", SCHEDULE), patch)
    assert result.results == [PropertyResult(prop=PROP, decision="reject", reason="missing_seed")]
    assert result.counts["patch"].ignored == 1
    assert result.counts["patch"].pass_ == 2


def test_matching_contract_hash_rows_are_kept() -> None:
    contract = make_contract()
    rows = side("...", SCHEDULE, contract_hash=contract.contract_hash)
    result = decide(contract, rows, rows)
    assert result.decision == "accept"
    assert result.results == [PropertyResult(prop=PROP, decision="accept", reason="both_pass")]
    assert result.counts["patch"].ignored == 0


@pytest.mark.parametrize(
    ("pin", "row_field", "row_value"),
    [
        ({"spec_hash": SPEC1}, "spec_hash", SPEC2),
        ({"fixture_closure_hash": FIX}, "fixture_closure_hash", FIX2),
    ],
    ids=["spec", "fixtures"],
)
@pytest.mark.parametrize("where", ["parent", "patch"])
def test_rows_contradicting_pinned_hash_are_ignored(
    pin: dict[str, str], row_field: str, row_value: str, where: str
) -> None:
    contract = make_contract(**pin)
    good = side("...", SCHEDULE, **pin)
    bad = side("...", SCHEDULE, **{**pin, row_field: row_value})
    parent, patch = (bad, good) if where == "parent" else (good, bad)
    result = decide(contract, parent, patch)
    assert result.decision == "reject"
    assert result.skip_reason == ""
    assert result.results == [PropertyResult(prop=PROP, decision="reject", reason="missing_seed")]
    assert result.counts[where].ignored == 3
    assert result.counts[where].lines == 3
    # and the same rows agreeing with the pin are accepted
    assert decide(contract, good, good).decision == "accept"


def test_rows_for_unknown_property_are_ignored() -> None:
    contract = with_props(PROP)
    stray = side("FFF", SCHEDULE, prop="prop.not_in_contract")
    rows = side("...", SCHEDULE)
    result = decide(contract, rows + stray, rows + stray)
    assert result.decision == "accept"
    assert result.results == [PropertyResult(prop=PROP, decision="accept", reason="both_pass")]
    assert result.counts["parent"].ignored == 3
    assert result.counts["patch"].ignored == 3


# --------------------------------------------------------------------------
# Whole patch.
# --------------------------------------------------------------------------


def _both(prop: str, parent_spec: str, patch_spec: str) -> tuple[list[RunRow], list[RunRow]]:
    return side(parent_spec, SCHEDULE, prop=prop), side(patch_spec, SCHEDULE, prop=prop)


@pytest.mark.parametrize(
    ("specs", "decision", "reasons"),
    [
        ((("...", "..F"), ("F..", "FFF")), "reject", ["regression", "shared_variant_fail"]),
        ((("F..", "FFF"), ("...", "..F")), "reject", ["shared_variant_fail", "regression"]),
        ((("F..", "FFF"), ("...", "...")), "propose_freeze", ["shared_variant_fail", "both_pass"]),
        (
            (("F..", "..."), ("F..", "F.F")),
            "propose_freeze",
            ["parent_fail_cleared", "shared_variant_fail"],
        ),
        ((("...", "..."), ("FFF", "...")), "accept", ["both_pass", "parent_fail_cleared"]),
        ((("FFF", "FFF"), ("...", "...")), "reject", ["uniform_fail", "both_pass"]),
    ],
    ids=[
        "regression+freeze",
        "freeze+regression",
        "freeze+accept",
        "accept+freeze",
        "all-accept",
        "uniform+accept",
    ],
)
def test_whole_patch_rule(
    specs: tuple[tuple[str, str], tuple[str, str]], decision: str, reasons: list[str]
) -> None:
    contract = with_props(PROP, OTHER)
    parent: list[RunRow] = []
    patch: list[RunRow] = []
    for prop, (p, c) in zip((PROP, OTHER), specs, strict=True):
        prows, crows = _both(prop, p, c)
        parent += prows
        patch += crows
    result = decide(contract, parent, patch)
    assert result.decision == decision
    assert [r.prop for r in result.results] == [PROP, OTHER]
    assert [r.reason for r in result.results] == reasons


def test_whole_patch_order_of_rows_in_file_does_not_matter_across_properties() -> None:
    """Interleaving two properties' rows keeps each one's own schedule."""
    contract = with_props(PROP, OTHER)
    a_parent, a_patch = _both(PROP, "...", "...")
    b_parent, b_patch = _both(OTHER, "F..", "FF.")
    interleave = [r for pair in zip(a_parent, b_parent, strict=True) for r in pair]
    result = decide(contract, interleave, b_patch + a_patch)
    assert result.decision == "propose_freeze"
    assert [r.reason for r in result.results] == ["both_pass", "shared_variant_fail"]


def test_combine_rules() -> None:
    acc = PropertyResult(prop="a", decision="accept", reason="both_pass")
    rej = PropertyResult(prop="b", decision="reject", reason="regression")
    frz = PropertyResult(prop="c", decision="propose_freeze", reason="shared_variant_fail")
    assert combine([acc, acc]) == "accept"
    assert combine([acc, frz]) == "propose_freeze"
    assert combine([frz, rej, acc]) == "reject"
    assert combine([rej]) == "reject"


# --------------------------------------------------------------------------
# Skipped: never accept.
# --------------------------------------------------------------------------


def test_no_parent_is_skipped() -> None:
    rows = side("...", SCHEDULE)
    result = decide(make_contract(), None, rows)
    assert result.decision == "skipped"
    assert result.skip_reason == "no_parent"
    assert result.results == []
    assert result.counts["parent"].lines == 0
    assert result.counts["patch"].lines == 3


def test_empty_parent_list_is_not_no_parent() -> None:
    result = decide(make_contract(), [], side("...", SCHEDULE))
    assert result.decision == "reject"
    assert result.results == [PropertyResult(prop=PROP, decision="reject", reason="missing_seed")]


@pytest.mark.parametrize(
    ("field", "a", "b", "skip"),
    [
        ("spec_hash", SPEC1, SPEC2, "spec_hash_differs"),
        ("fixture_closure_hash", FIX, FIX2, "fixture_hash_differs"),
    ],
)
@pytest.mark.parametrize(
    ("parent_spec", "patch_spec"), [("...", "..."), ("F..", "FFF"), ("FFF", "...")]
)
def test_tree_hash_differs_is_skipped(
    field: str, a: str, b: str, skip: str, parent_spec: str, patch_spec: str
) -> None:
    parent = side(parent_spec, SCHEDULE, **{field: a})
    patch = side(patch_spec, SCHEDULE, **{field: b})
    result = decide(make_contract(), parent, patch)
    assert result.decision == "skipped"
    assert result.skip_reason == skip
    assert result.results == []


def test_tree_hash_differs_on_another_property_skips_whole_gate() -> None:
    contract = with_props(PROP, OTHER)
    parent = side("...", SCHEDULE, spec_hash=SPEC1) + side(
        "...", SCHEDULE, prop=OTHER, spec_hash=SPEC1
    )
    patch = side("...", SCHEDULE, spec_hash=SPEC1) + side(
        "...", SCHEDULE, prop=OTHER, spec_hash=SPEC2
    )
    result = decide(contract, parent, patch)
    assert result.decision == "skipped"
    assert result.skip_reason == "spec_hash_differs"


@pytest.mark.parametrize("reason", list(SkipReason))
def test_explicit_skip_reason_never_accepts(reason: SkipReason) -> None:
    rows = side("...", SCHEDULE)
    result = decide(make_contract(), rows, rows, skip_reason=reason)
    assert result.decision == "skipped"
    assert result.skip_reason == reason.value


def test_rows_not_saved_is_skipped() -> None:
    rows = side("...", SCHEDULE)
    result = decide(make_contract(), rows, rows, skip_reason=SkipReason.ROWS_NOT_SAVED)
    assert result.decision == "skipped"
    assert result.skip_reason == "rows_not_saved"
    assert result.to_json()["skip_reason"] == "rows_not_saved"


# --------------------------------------------------------------------------
# Witness normalisation.
# --------------------------------------------------------------------------

NOISY_PAIRS = [
    (
        "memory-address",
        f"{W} <Order object at 0x7f3a2b1c9d10>",
        f"{W} <Order object at 0x55d1e0a4b2f8>",
    ),
    (
        "timestamp-iso",
        f"{W} at 2024-03-01T12:00:01.123456+00:00",
        f"{W} at 2025-11-29T20:51:44.9Z",
    ),
    (
        "timestamp-log",
        f"{W} logged 2024-03-01 12:00:01,123",
        f"{W} logged 2024-03-02 08:15:59,007",
    ),
    (
        "tmp-path",
        f"{W} reading /tmp/pytest-of-root/pytest-3/test_total0/orders.json",
        f"{W} reading /tmp/pytest-of-ci/pytest-118/test_total1/orders.json",
    ),
    (
        "var-folders",
        f"{W} reading /private/var/folders/xy/abc123/T/tmpk2j/orders.json",
        f"{W} reading /var/tmp/tmpq9z/orders.json",
    ),
    ("pid", f"{W} worker pid=4242", f"{W} worker pid=17"),
    ("pid-space", f"{W} (PID 4242)", f"{W} (PID 99)"),
    ("duration-ms", f"{W} took 543.21ms", f"{W} took 12.00ms"),
    ("duration-s", f"{W} after 0.04s", f"{W} after 12 s"),
    (
        "all-at-once",
        f"{W} <O at 0xdeadbeef> 2024-01-01T00:00:00 /tmp/tmpab12/x.json pid=1 0.5s",
        f"{W} <O at 0xfeedface> 2026-12-31T23:59:59 /tmp/tmpzz99/x.json pid=31337 17.25s",
    ),
    ("whitespace", f"  {W}\n", W),
]


@pytest.mark.parametrize(("a", "b"), [p[1:] for p in NOISY_PAIRS], ids=[p[0] for p in NOISY_PAIRS])
def test_noise_does_not_change_the_class(a: str, b: str) -> None:
    assert normalise_witness(a) == normalise_witness(b)


@pytest.mark.parametrize(("a", "b"), [p[1:] for p in NOISY_PAIRS], ids=[p[0] for p in NOISY_PAIRS])
def test_noise_only_witnesses_still_propose_freeze(a: str, b: str) -> None:
    parent = [row(11, "fail", witness=a), row(29, "pass", witness="")]
    patch = [row(11, "fail", witness=b), row(29, "fail", witness=a)]
    assert decide_property([11, 29], parent, patch) == (
        "propose_freeze",
        Reason.SHARED_VARIANT_FAIL,
    )


DIFFERENT = [
    ("line", W, W2),
    ("file", W, W.replace("test_orders.py", "test_refunds.py")),
    ("exception", W, W.replace("AssertionError", "KeyError")),
    ("prop", W, W.replace(PROP, OTHER, 1)),
    ("hypothesis-origin", f"{PROP}|ValueError|orders.py:40", f"{PROP}|ValueError|orders.py:41"),
    (
        "dir-named-tmp",
        f"{PROP}|AssertionError|tests/tmp/test_a.py:12",
        f"{PROP}|AssertionError|tests/tmp/test_b.py:12",
    ),
]


@pytest.mark.parametrize(("a", "b"), [d[1:] for d in DIFFERENT], ids=[d[0] for d in DIFFERENT])
def test_different_assertion_ids_are_different_classes(a: str, b: str) -> None:
    assert normalise_witness(a) != normalise_witness(b)
    parent = [row(11, "fail", witness=a), row(29, "pass", witness="")]
    patch = [row(11, "fail", witness=b), row(29, "fail", witness=b)]
    assert decide_property([11, 29], parent, patch) == ("reject", Reason.WITNESS_MISMATCH)


def test_normalisation_keeps_the_class_shape() -> None:
    assert normalise_witness(W) == W
    assert normalise_witness(f"{W} <x at 0xABCDEF>") == f"{W} <x at 0x?>"


# --------------------------------------------------------------------------
# The review note: four lines.
# --------------------------------------------------------------------------


def _note_lines(result: GateResult) -> list[str]:
    note = review_note(result)
    assert note.endswith("\n")
    lines = note.splitlines()
    assert len(lines) == 4, note
    return lines


def test_review_note_four_lines() -> None:
    contract = with_props(PROP, OTHER)
    a_parent, a_patch = _both(PROP, "...", "..F")
    b_parent, b_patch = _both(OTHER, "F..", "FFF")
    stray = row(11, "pass", prop="prop.stray")
    result = decide(contract, a_parent + b_parent, a_patch + b_patch + [stray])
    lines = _note_lines(result)
    assert lines[0] == f"contract: {contract.contract_hash}"
    assert lines[1] == "decision: reject"
    assert lines[2] == f"properties: {PROP}=regression, {OTHER}=shared_variant_fail"
    assert lines[3] == (
        "rows: parent 6 lines (5 pass, 1 fail); patch 7 lines (2 pass, 4 fail, 1 ignored)"
    )


def test_review_note_skipped() -> None:
    result = decide(make_contract(), None, side("...", SCHEDULE))
    lines = _note_lines(result)
    assert lines[0].startswith("contract: sha256:")
    assert lines[1].startswith("decision: skipped")
    assert "no_parent" in lines[1]
    assert lines[2].startswith("properties: ")
    assert lines[3] == "rows: parent 0 lines (0 pass, 0 fail); patch 3 lines (3 pass, 0 fail)"


def test_review_note_empty_rows() -> None:
    result = decide(make_contract(), [], [])
    lines = _note_lines(result)
    assert lines[1] == "decision: reject"
    assert "missing_seed" in lines[2]
    assert lines[3] == "rows: parent 0 lines (0 pass, 0 fail); patch 0 lines (0 pass, 0 fail)"


def test_review_note_stays_four_lines_with_hostile_property_id() -> None:
    """A property id read from a rows file may hold a newline; the note must
    still be exactly four lines (docs/design/differential-gate.md)."""
    prop = "prop.a\nprop.b"
    rows = side("...", SCHEDULE, prop=prop)
    result = decide(make_contract(), rows, rows)
    _note_lines(result)
