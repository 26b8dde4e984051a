"""The review note: four lines a reviewer reads first (docs/design/differential-gate.md).

Whatever lists per-property rows for a reviewer (the note, the ``differential`` check's
evidence, ``verdicts show``, the view's grid) lists them :func:`deciding_first`: the rows
that can decide a verdict lead, so the one that did is never behind "+N more".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from ._gate import Decision, GateResult

T = TypeVar("T")

SEVERITY: tuple[Decision, ...] = ("reject", "skipped", "propose_freeze", "accept")
"""Decisions from the one that decides a verdict first to the one that decides nothing: one
reject rejects, a skipped gate proves nothing, a proposal needs a human, and an accept
decides only when every row accepts."""


def severity(decision: object) -> int:
    """Where ``decision`` sorts: a value that is none of the four (a file we did not write)
    sorts with a reject, never behind the rows that pass."""
    return SEVERITY.index(decision) if decision in SEVERITY else 0


def deciding_first(items: Iterable[T], decision_of: Callable[[T], object]) -> list[T]:
    """``items`` in their order, but rejects, then skips, then proposals, then accepts."""
    return sorted(items, key=lambda item: severity(decision_of(item)))


def one_line(text: str) -> str:
    """Property ids come from input files: keep the note at four lines whatever they hold."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def review_note(
    result: GateResult,
    *,
    final: str | None = None,
    findings: Sequence[str] = (),
    decided_by: Sequence[str] = (),
) -> str:
    """Contract hash; decision; each property's reason (the deciding ones first); row counts
    per side.

    ``final`` is the top-level decision when the scorecard changed the gate's,
    ``decided_by`` what decided it (the scorer's ``decided_by``), ``findings`` the scorecard
    checks that did not pass and did not decide.
    """
    decision = final or result.decision
    details = []
    if decided_by:
        details.append(f"decided by {', '.join(one_line(d) for d in decided_by)}")
    if final and final != result.decision:
        details.append(f"gate: {result.decision}")
    if result.skip_reason and result.skip_reason not in decided_by:
        details.append(f"gate skipped: {result.skip_reason}")
    details.extend(findings)
    if details:
        decision += f" ({'; '.join(details)})"
    reasons = (
        ", ".join(
            f"{one_line(r.prop)}={r.reason}"
            for r in deciding_first(result.results, lambda r: r.decision)
        )
        or "(none: gate skipped)"
    )
    sides = []
    for side in ("parent", "patch"):
        c = result.counts[side]
        ignored = f", {c.ignored} ignored" if c.ignored else ""
        sides.append(f"{side} {c.lines} lines ({c.pass_} pass, {c.fail} fail{ignored})")
    return (
        "\n".join(
            [
                f"contract: {result.contract_hash}",
                f"decision: {decision}",
                f"properties: {reasons}",
                f"rows: {'; '.join(sides)}",
            ]
        )
        + "\n"
    )
