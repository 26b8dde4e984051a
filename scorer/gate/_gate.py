"""The differential gate: parent rows vs patch rows, per property
(docs/design/differential-gate.md).

Fail closed: every case that is not positively one of the accept rows or the
propose_freeze row (all seven conditions) is a reject. See
docs/design/differential-gate.md for the order of the checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .._contract import Contract
from ._rows import STATUSES, RunRow
from ._witness import normalise_witness

Decision = Literal["accept", "reject", "propose_freeze", "skipped"]


class Reason(StrEnum):
    MISSING_SEED = "missing_seed"
    SCHEDULE_MISMATCH = "schedule_mismatch"
    INVALID_STATUS = "invalid_status"
    BOTH_PASS = "both_pass"
    REGRESSION = "regression"
    PARENT_FAIL_CLEARED = "parent_fail_cleared"
    WITNESS_MISMATCH = "witness_mismatch"
    UNIFORM_FAIL = "uniform_fail"
    SPEC_HASH_MISMATCH = "spec_hash_mismatch"
    FIXTURE_HASH_MISMATCH = "fixture_hash_mismatch"
    SHARED_VARIANT_FAIL = "shared_variant_fail"


class SkipReason(StrEnum):
    NO_PARENT = "no_parent"
    SPEC_HASH_DIFFERS = "spec_hash_differs"
    FIXTURE_HASH_DIFFERS = "fixture_hash_differs"
    ROWS_NOT_SAVED = "rows_not_saved"


class PropertyResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prop: str
    decision: Decision
    reason: str


class SideCounts(BaseModel):
    lines: int
    """Rows read from the side's JSONL, whatever they hold."""
    pass_: int = 0
    fail: int = 0
    ignored: int = 0
    """Rows ignored: foreign contract/spec/fixture hash or unknown property."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_json(self) -> dict[str, int]:
        return {"lines": self.lines, "pass": self.pass_, "fail": self.fail, "ignored": self.ignored}


class GateResult(BaseModel):
    """The gate's decision object (docs/design/differential-gate.md), before the scorecard."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: Decision
    contract_hash: str
    results: list[PropertyResult]
    counts: dict[str, SideCounts]
    skip_reason: str = ""

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "decision": self.decision,
            "contract_hash": self.contract_hash,
            "results": [r.model_dump() for r in self.results],
            "counts": {side: c.to_json() for side, c in self.counts.items()},
        }
        if self.skip_reason:
            data["skip_reason"] = self.skip_reason
        return data


def _is_foreign(row: RunRow, contract: Contract, known: set[str] | None) -> bool:
    if known is not None and row.prop not in known:
        return True
    if row.contract_hash is not None and row.contract_hash != contract.contract_hash:
        return True
    if contract.spec_hash and row.spec_hash is not None and row.spec_hash != contract.spec_hash:
        return True
    pinned_fixtures = contract.fixture_closure_hash
    return bool(
        pinned_fixtures
        and row.fixture_closure_hash is not None
        and row.fixture_closure_hash != pinned_fixtures
    )


def _counts(rows: Sequence[RunRow], kept: Sequence[RunRow]) -> SideCounts:
    return SideCounts(
        lines=len(rows),
        pass_=sum(r.status == "pass" for r in kept),
        fail=sum(r.status == "fail" for r in kept),
        ignored=len(rows) - len(kept),
    )


def _property_order(
    contract: Contract, parent: Sequence[RunRow], patch: Sequence[RunRow]
) -> list[str]:
    if contract.properties:
        return contract.property_ids()
    return list(dict.fromkeys(row.prop for row in [*parent, *patch]))


def _schedule_reason(schedule: list[int], seeds: list[int]) -> Reason | None:
    if set(schedule) - set(seeds):
        return Reason.MISSING_SEED
    if seeds != schedule:
        return Reason.SCHEDULE_MISMATCH
    return None


def _hash_values(rows: Sequence[RunRow], attr: str) -> set[str | None]:
    return {getattr(row, attr) for row in rows}


def _split(rows: Sequence[RunRow]) -> bool:
    return len({row.status for row in rows}) > 1


def decide_property(
    schedule: list[int], parent: Sequence[RunRow], patch: Sequence[RunRow]
) -> tuple[Decision, Reason]:
    """One property's decision from its rows on each side, in file order."""
    for rows in (parent, patch):
        reason = _schedule_reason(schedule, [row.seed for row in rows])
        if reason is Reason.MISSING_SEED:
            return "reject", reason
    for rows in (parent, patch):
        if _schedule_reason(schedule, [row.seed for row in rows]):
            return "reject", Reason.SCHEDULE_MISMATCH
    if any(row.status not in STATUSES for row in [*parent, *patch]):
        return "reject", Reason.INVALID_STATUS
    parent_fails = any(row.status == "fail" for row in parent)
    patch_fails = any(row.status == "fail" for row in patch)
    if not parent_fails and not patch_fails:
        return "accept", Reason.BOTH_PASS
    if not parent_fails:
        return "reject", Reason.REGRESSION
    if not patch_fails:
        return "accept", Reason.PARENT_FAIL_CLEARED
    return _both_fail(parent, patch)


def _both_fail(parent: Sequence[RunRow], patch: Sequence[RunRow]) -> tuple[Decision, Reason]:
    """The seven conditions; the schedule and both-fail ones already hold here."""
    if (
        _hash_values(parent, "spec_hash") != _hash_values(patch, "spec_hash")
        or len(_hash_values(parent, "spec_hash")) != 1
    ):
        return "reject", Reason.SPEC_HASH_MISMATCH
    parent_fixtures = _hash_values(parent, "fixture_closure_hash")
    if parent_fixtures != _hash_values(patch, "fixture_closure_hash") or len(parent_fixtures) != 1:
        return "reject", Reason.FIXTURE_HASH_MISMATCH
    parent_classes = {normalise_witness(r.witness) for r in parent if r.status == "fail"}
    patch_classes = {normalise_witness(r.witness) for r in patch if r.status == "fail"}
    if parent_classes != patch_classes:
        return "reject", Reason.WITNESS_MISMATCH
    if not (_split(parent) or _split(patch)):
        return "reject", Reason.UNIFORM_FAIL
    return "propose_freeze", Reason.SHARED_VARIANT_FAIL


def _tree_hash_skip(parent: Sequence[RunRow], patch: Sequence[RunRow]) -> SkipReason | None:
    for attr, reason in (
        ("spec_hash", SkipReason.SPEC_HASH_DIFFERS),
        ("fixture_closure_hash", SkipReason.FIXTURE_HASH_DIFFERS),
    ):
        ours = _hash_values(parent, attr) - {None}
        theirs = _hash_values(patch, attr) - {None}
        if ours and theirs and ours != theirs:
            return reason
    return None


def combine(results: Sequence[PropertyResult]) -> Decision:
    """Whole patch: any reject rejects; else any proposal; else accept.

    No property at all is a reject: an empty verdict proves nothing.
    """
    decisions = {r.decision for r in results}
    if not results or "reject" in decisions:
        return "reject"
    if "propose_freeze" in decisions:
        return "propose_freeze"
    return "accept"


def decide(
    contract: Contract,
    parent: Sequence[RunRow] | None,
    patch: Sequence[RunRow],
    *,
    skip_reason: SkipReason | None = None,
) -> GateResult:
    """The gate over both sides' rows. ``parent=None`` means there is no parent."""
    known = set(contract.property_ids()) if contract.properties else None
    parent_rows = list(parent or [])
    parent_kept = [r for r in parent_rows if not _is_foreign(r, contract, known)]
    patch_kept = [r for r in patch if not _is_foreign(r, contract, known)]
    counts = {"parent": _counts(parent_rows, parent_kept), "patch": _counts(patch, patch_kept)}
    if parent is None:
        skip_reason = SkipReason.NO_PARENT
    skip_reason = skip_reason or _tree_hash_skip(parent_kept, patch_kept)
    if skip_reason:
        return GateResult(
            decision="skipped",
            contract_hash=contract.contract_hash,
            results=[],
            counts=counts,
            skip_reason=skip_reason.value,
        )
    results = []
    for prop in _property_order(contract, parent_kept, patch_kept):
        decision, reason = decide_property(
            contract.seeds,
            [r for r in parent_kept if r.prop == prop],
            [r for r in patch_kept if r.prop == prop],
        )
        results.append(PropertyResult(prop=prop, decision=decision, reason=reason.value))
    if not results:
        results.append(
            PropertyResult(prop="*", decision="reject", reason=Reason.MISSING_SEED.value)
        )
    return GateResult(
        decision=combine(results),
        contract_hash=contract.contract_hash,
        results=results,
        counts=counts,
    )
