"""The review note: four lines a reviewer reads first (docs/design/differential-gate.md)."""

from __future__ import annotations

from collections.abc import Sequence

from ._gate import GateResult


def one_line(text: str) -> str:
    """Property ids come from input files: keep the note at four lines whatever they hold."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def review_note(
    result: GateResult, *, final: str | None = None, findings: Sequence[str] = ()
) -> str:
    """Contract hash; decision; each property's reason; row counts per side.

    ``final`` is the top-level decision when the scorecard changed the gate's,
    ``findings`` the scorecard checks that did not pass.
    """
    decision = final or result.decision
    details = []
    if final and final != result.decision:
        details.append(f"gate: {result.decision}")
    if result.skip_reason:
        details.append(f"gate skipped: {result.skip_reason}")
    details.extend(findings)
    if details:
        decision += f" ({'; '.join(details)})"
    reasons = (
        ", ".join(f"{one_line(r.prop)}={r.reason}" for r in result.results)
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
