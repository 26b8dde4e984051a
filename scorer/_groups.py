"""Run groups: the contract's schedule, and the checks the agent cannot know.

Each group is a set of properties run seed by seed on both trees and gated on its own, by
the same gate (docs/design/differential-gate.md, docs/design/held-out.md):

    contract     the contract's properties on its schedule (what the agent sees)
    extra_seeds  the contract's properties on seeds drawn fresh for this submission
    held_out     the operator's held-out properties, their tests mounted apart from the tree

The hidden groups' rows go to the bundle marked (``"extra_seed": true``,
``"held_out": true``) under their own contract hash; the agent's summary names none of
their ids, seeds or witnesses: a verdict they change shows one result ``held_out``.
See docs/design/held-out.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from patchwarden.sandbox import PropertyTarget

from ._contract import Contract
from ._held_out import HeldOut
from .gate import (
    SEVERITY,
    Decision,
    GateResult,
    RunRow,
    SkipReason,
    combine,
    decide,
    deciding_first,
    one_line,
)

GroupName = Literal["contract", "extra_seeds", "held_out"]
HIDDEN_GROUPS: tuple[GroupName, ...] = ("extra_seeds", "held_out")
HIDDEN_REASON = "held_out"
"""The one reason the agent sees for a verdict a hidden group changed."""
ROW_FLAGS: dict[GroupName, str] = {"extra_seeds": "extra_seed", "held_out": "held_out"}


@dataclass(frozen=True)
class RunGroup:
    name: GroupName
    contract: Contract
    """Resolved: the seeds this group runs, its properties, its pinned hashes."""
    tests_dir: Path | None = None
    """The held-out directory (node ids relative to it); None: the tree."""

    @property
    def hidden(self) -> bool:
        return self.name != "contract"

    def targets(self) -> list[PropertyTarget]:
        return [PropertyTarget(prop=p.id, node_id=p.test) for p in self.contract.properties]

    def run_name(self, tree: str) -> str:
        """The first half of a run's key (scorer/executors ``UnitKey``): the tree's name for
        the contract's schedule, ``group:tree`` for a hidden group."""
        return tree if not self.hidden else f"{self.name}:{tree}"

    @property
    def row_flag(self) -> str | None:
        """The field that marks this group's rows in the bundle, if any."""
        return ROW_FLAGS.get(self.name)


def split_run_name(name: str) -> tuple[str, str]:
    """(group, tree) of a run name: ``held_out:patch`` or plain ``patch`` (the contract's)."""
    group, _, tree = name.rpartition(":")
    return group or "contract", tree


def plan_groups(
    resolved: Contract, extra_seeds: Sequence[int], held_out: HeldOut | None
) -> list[RunGroup]:
    """The contract's group first, then the hidden ones that have something to run."""
    groups = [RunGroup("contract", resolved)]
    if extra_seeds:
        groups.append(
            RunGroup("extra_seeds", resolved.model_copy(update={"seeds": list(extra_seeds)}))
        )
    if held_out is not None:
        contract = held_out.contract.model_copy(
            update={
                "parent_sha": resolved.parent_sha,
                "patch_sha": resolved.patch_sha,
                "fixture_closure_hash": resolved.fixture_closure_hash,
            }
        )
        groups.append(RunGroup("held_out", contract, tests_dir=held_out.directory))
    return groups


def extra_seeds_gate(
    resolved: Contract,
    contract_gate: GateResult,
    contract_rows: Mapping[str, Sequence[RunRow]],
    extra: Contract,
    extra_rows: Mapping[str, Sequence[RunRow]],
    *,
    skip_reason: SkipReason | None = None,
) -> GateResult:
    """The extra seeds' gate: the contract's properties on the schedule and the extra seeds
    as one schedule, so that what a seed of the schedule already showed counts (a failure
    both sides share on the schedule and on an extra seed is one shared variant fail, not a
    ``uniform_fail`` of a lone seed). Its results are the properties whose result the extra
    seeds changed; none changed: accept. Counts are the extra seeds' rows
    (docs/design/differential-gate.md, "Extra seeds")."""
    schedule = resolved.model_copy(update={"seeds": [*resolved.seeds, *extra.seeds]})
    stamp = {"contract_hash": schedule.contract_hash}
    sides = {
        side: [r.model_copy(update=stamp) for r in (*contract_rows[side], *extra_rows[side])]
        for side in ("parent", "patch")
    }
    whole = decide(schedule, sides["parent"], sides["patch"], skip_reason=skip_reason)
    alone = decide(extra, extra_rows["parent"], extra_rows["patch"], skip_reason=skip_reason)
    if whole.decision == "skipped":
        return alone
    before = {(r.prop, r.decision, r.reason) for r in contract_gate.results}
    news = [r for r in whole.results if (r.prop, r.decision, r.reason) not in before]
    return GateResult(
        decision=combine(news) if news else "accept",
        contract_hash=extra.contract_hash,
        results=news,
        counts=alone.counts,
    )


def combine_decisions(decisions: Iterable[Decision]) -> Decision:
    """Several gates' decisions as one: any reject rejects; a skipped gate proves nothing, so
    it comes next; then a proposal; accept only when every gate accepts."""
    given = set(decisions)
    return next((d for d in SEVERITY if d in given), "reject")


def hidden_decision(hidden: Mapping[str, GateResult]) -> Decision | None:
    """The hidden groups' decision, None when there are none."""
    return combine_decisions(g.decision for g in hidden.values()) if hidden else None


def hidden_json(
    hidden: Mapping[str, GateResult], *, extra_seeds: Sequence[int], held_out: HeldOut | None
) -> dict[str, object]:
    """The reviewers' sections of decision.json, one per hidden group."""
    out: dict[str, object] = {}
    if "extra_seeds" in hidden:
        out["extra_seeds"] = {"seeds": list(extra_seeds), **hidden["extra_seeds"].to_json()}
    if "held_out" in hidden and held_out is not None:
        out["held_out"] = {
            "dir": str(held_out.directory),
            "seeds": list(held_out.contract.seeds),
            "spec_hash": held_out.contract.spec_hash,
            **hidden["held_out"].to_json(),
        }
    return out


def hidden_note(hidden: Mapping[str, GateResult], *, extra_seeds: Sequence[int]) -> str:
    """One review-note line per hidden group, after the four lines of the contract's gate."""
    lines = []
    for name, gate in hidden.items():
        label = f"extra seeds {list(extra_seeds)}" if name == "extra_seeds" else "held out"
        reasons = ", ".join(
            f"{one_line(r.prop)}={r.reason}"
            for r in deciding_first(gate.results, lambda r: r.decision)
        )
        skipped = f" (gate skipped: {gate.skip_reason})" if gate.skip_reason else ""
        sides = "; ".join(
            f"{side} {c.lines} lines ({c.pass_} pass, {c.fail} fail)"
            for side, c in gate.counts.items()
        )
        lines.append(f"{label}: {gate.decision}{skipped}: {reasons or '-'}; rows: {sides}")
    return "".join(line + "\n" for line in lines)
