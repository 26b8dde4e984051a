"""The scorecard: every check with its evidence (SPEC section 6).

The top-level decision is the gate's unless a check rejects; ``review``
findings travel with the decision.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ._gate import Decision, GateResult

Outcome = Literal["pass", "review", "reject"]
MACHINERY_NAMES = frozenset(
    {"pytest", "_pytest", "hypothesis", "pluggy", "sitecustomize", "usercustomize"}
)


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    check: str
    outcome: Outcome
    evidence: list[str] = []


class Change(BaseModel):
    """One path the patch changes (a rename is two changes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: str
    """git's letter: A added, M modified, D deleted, T type changed."""
    path: str


def under(path: str, roots: Iterable[str]) -> bool:
    return any(
        path == root.rstrip("/") or path.startswith(root.rstrip("/") + "/") for root in roots
    )


def matches(path: str, globs: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in globs)


def check_contract_tampered(changes: Sequence[Change], contract_paths: Sequence[str]) -> Check:
    hits = [f"{c.status} {c.path}" for c in changes if under(c.path, contract_paths)]
    return Check(check="contract_tampered", outcome="reject" if hits else "pass", evidence=hits)


def check_fixture_drifted(drifts: Sequence[str]) -> Check:
    return Check(
        check="fixture_drifted", outcome="reject" if drifts else "pass", evidence=list(drifts)
    )


def check_oracle_pin(changes: Sequence[Change], oracle_files: Sequence[str]) -> Check:
    hits = [f"{c.status} {c.path}" for c in changes if c.path in set(oracle_files)]
    return Check(check="oracle_pin", outcome="reject" if hits else "pass", evidence=hits)


def check_test_tampering(
    changes: Sequence[Change], protected: Sequence[str], severity: Outcome
) -> Check:
    hits = [f"{c.status} {c.path}" for c in changes if matches(c.path, protected)]
    return Check(check="test_tampering", outcome=severity if hits else "pass", evidence=hits)


def shadowing_paths(paths: Iterable[str]) -> list[str]:
    """Paths that would take over the test machinery if importable."""
    found = []
    for path in paths:
        pure = PurePosixPath(path)
        names = {*pure.parts[:-1], pure.stem if pure.suffix == ".py" else pure.name}
        if pure.suffix == ".pth" or names & MACHINERY_NAMES:
            found.append(path)
    return found


def check_shadowing(changes: Sequence[Change], runtime_shadowed: Sequence[str]) -> Check:
    hits = [
        f"{c.status} {c.path}" for c in changes if c.status != "D" and shadowing_paths([c.path])
    ]
    hits += [f"loaded from the tree at run time: {name}" for name in runtime_shadowed]
    return Check(check="shadowing", outcome="reject" if hits else "pass", evidence=hits)


def check_differential(gate: GateResult) -> Check:
    outcome: Outcome = {
        "accept": "pass",
        "reject": "reject",
        "propose_freeze": "review",
        "skipped": "review",
    }[gate.decision]  # type: ignore[assignment]
    evidence = [f"{r.prop}: {r.reason}" for r in gate.results]
    if gate.skip_reason:
        evidence.append(f"gate skipped: {gate.skip_reason}")
    return Check(check="differential", outcome=outcome, evidence=evidence)


def check_quarantine(left_out: Sequence[str]) -> Check:
    return Check(check="quarantine", outcome="pass", evidence=[f"left out: {t}" for t in left_out])


def final_decision(gate: Decision, checks: Sequence[Check]) -> Decision:
    """The gate's decision unless a check rejects."""
    if any(c.outcome == "reject" for c in checks):
        return "reject"
    return gate
