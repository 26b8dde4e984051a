"""Synthetic verdicts for the reviewer's view: bundles shaped as scorer/_score.py writes
them, plus index lines, without running anything.

Used where real scoring would cost seconds per verdict and prove nothing more: a
thousand verdicts for bench/view_list.py, and bundles with held-out rows, hostile
property ids or broken files for tests/test_view.py. The browser tests use real ones.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from patchwarden.scorer import (
    GateResult,
    PropertyResult,
    SideCounts,
    deciding_first,
    derive_decided_by,
    review_note,
)

DECISIONS = ("accept", "reject", "propose_freeze", "skipped")
OUTCOMES = (("reject", "reject"), ("skipped", "review"), ("propose_freeze", "review"))
"""The differential check's outcome of the gates' decisions, the first that one has."""
DIFF = """\
diff --git a/orders/total.py b/orders/total.py
index 57e8d4d..1267c47 100644
--- a/orders/total.py
+++ b/orders/total.py
@@ -8,3 +8,3 @@ from decimal import ROUND_HALF_UP, Decimal
 CENT = Decimal("0.01")
-BULK_FACTOR = 0.95
+BULK_FACTOR = Decimal("0.95")
 BULK_MIN_QTY = 10
"""


def verdict_id(n: int) -> str:
    return f"20261130T{n // 3600 % 24:02d}{n // 60 % 60:02d}{n % 60:02d}Z-{n:010x}-ab{n % 100:02d}"


def _row(prop: str, seed: int, status: str, tree: str, sha: str, held_out: bool) -> dict[str, Any]:
    row: dict[str, Any] = {
        "prop": prop,
        "seed": seed,
        "status": status,
        "witness": f"{prop}|AssertionError|tests/properties/test_orders.py:{seed}"
        if status == "fail"
        else "",
        "tree": tree,
        "sha": sha,
    }
    if held_out:
        row["held_out"] = True
    return row


def write_verdict(
    log_dir: Path,
    n: int,
    *,
    decision: str = "accept",
    gate_decision: str | None = None,
    props: Sequence[str] = ("prop.a", "prop.b", "prop.c"),
    results: dict[str, tuple[str, str]] | None = None,
    seeds: Sequence[int] = (11, 29, 47),
    held_out: Sequence[str] = (),
    held_out_decision: str = "accept",
    failing: dict[tuple[str, str, int], str] | None = None,
    evidence: Sequence[str] = ("orders/total.py: bulk_price: numeric constants: removed 2",),
    index: bool = True,
) -> str:
    """Write verdict number ``n``'s bundle (and, with ``index``, its index line); its id.

    ``decision`` is the verdict's; ``gate_decision`` the contract gate's (default the same),
    each property's result that decision with its usual reason unless ``results`` gives
    (decision, reason) for it; ``held_out_decision`` the held-out group's. What decided and
    the review note's decision line come from the scorer's own functions."""
    vid = verdict_id(n)
    parent_sha, patch_sha = f"{n:040x}"[::-1], f"{n:040x}"
    bundle = log_dir / "verdicts" / vid
    (bundle / "runs").mkdir(parents=True)
    failing = failing or {}
    rows: dict[str, list[dict[str, Any]]] = {"parent": [], "patch": []}
    counts = {}
    for tree, sha in (("parent", parent_sha), ("patch", patch_sha)):
        for seed in seeds:
            for prop in [*props, *held_out]:
                status = failing.get((tree, prop, seed), "pass")
                rows[tree].append(_row(prop, seed, status, tree, sha, prop in held_out))
        fails = sum(1 for r in rows[tree] if r["status"] == "fail")
        counts[tree] = {
            "lines": len(rows[tree]),
            "pass": len(rows[tree]) - fails,
            "fail": fails,
            "ignored": 0,
        }
    gate = gate_decision or decision
    usual = {"accept": "both_pass", "reject": "regression"}.get(gate, "shared_variant_fail")
    given = results or {}
    results_json = [
        {
            "prop": p,
            "decision": given.get(p, (gate, usual))[0],
            "reason": given.get(p, (gate, usual))[1],
        }
        for p in props
    ]
    held_reason = "both_pass" if held_out_decision == "accept" else "uniform_fail"
    held_json = [
        {"prop": p, "decision": held_out_decision, "reason": held_reason} for p in held_out
    ]
    lines = [(r["decision"], f"{r['prop']}: {r['reason']}") for r in results_json]
    lines += [(r["decision"], f"held_out: {r['prop']}: {r['reason']}") for r in held_json]
    gates = [gate, *([held_out_decision] if held_out else [])]
    outcome = next((o for d, o in OUTCOMES if d in gates), "pass")
    scorecard = [
        {"check": "contract_tampered", "outcome": "pass", "evidence": []},
        {
            "check": "differential",
            "outcome": outcome,
            "evidence": [line for _, line in deciding_first(lines, lambda pair: pair[0])],
        },
        {"check": "spec_review", "outcome": "review", "evidence": list(evidence)},
    ]
    decision_json: dict[str, Any] = {
        "decision": decision,
        "contract_hash": f"sha256:{n:064x}",
        "results": results_json,
        "counts": counts,
        "gate_decision": gate,
        "verdict_id": vid,
        "parent_sha": parent_sha,
        "patch_sha": patch_sha,
        "scorecard": scorecard,
    }
    if held_out:
        decision_json["held_out"] = {"decision": held_out_decision, "results": held_json}
    decided = derive_decided_by(decision_json)
    decision_json["decided_by"] = decided
    note = review_note(
        GateResult(
            decision=gate,  # type: ignore[arg-type]
            contract_hash=decision_json["contract_hash"],
            results=[PropertyResult.model_validate(r) for r in results_json],
            counts={
                side: SideCounts(lines=c["lines"], pass_=c["pass"], fail=c["fail"])
                for side, c in counts.items()
            },
        ),
        final=decision,
        decided_by=decided,
        findings=["spec_review: review"],
    )
    if held_out:
        reasons = ", ".join(f"{r['prop']}={r['reason']}" for r in held_json)
        note += f"held out: {held_out_decision}: {reasons}\n"
    files = {
        "decision.json": json.dumps(decision_json, indent=2),
        "scorecard.json": json.dumps(scorecard, indent=2),
        "contract.resolved.json": json.dumps(
            {"seeds": list(seeds), "properties": [{"id": p, "test": f"t.py::{p}"} for p in props]}
        ),
        "review-note.txt": note,
        "parent.jsonl": "".join(json.dumps(r) + "\n" for r in rows["parent"]),
        "patch.jsonl": "".join(json.dumps(r) + "\n" for r in rows["patch"]),
        "restored.json": json.dumps(["tests/test_orders.py: restored from the parent"]),
        "patch.diff": DIFF,
    }
    for seed in seeds:
        for tree in ("parent", "patch"):
            stem = f"runs/{tree}-seed{seed}"
            files[f"{stem}.stdout.txt"] = f"{tree} seed {seed}: 3 passed\n"
            files[f"{stem}.stderr.txt"] = ""
            files[f"{stem}.json"] = json.dumps(
                {"tree": tree, "seed": seed, "complete": True, "exit_code": 0, "duration_s": 0.5}
            )
    for name, text in files.items():
        (bundle / name).write_text(text, encoding="utf-8")
    if index:
        append_index(
            log_dir,
            {
                "verdict_id": vid,
                "decision": decision,
                "gate_decision": gate,
                "parent_sha": parent_sha,
                "patch_sha": patch_sha,
                "contract_hash": decision_json["contract_hash"],
                "results": results_json,
                **({"hidden": {"held_out": held_out_decision}} if held_out else {}),
                "decided_by": decided,
                "bundle": str(bundle),
            },
        )
    return vid


def append_index(log_dir: Path, entry: dict[str, Any] | str) -> None:
    line = entry if isinstance(entry, str) else json.dumps(entry, sort_keys=True) + "\n"
    with (log_dir / "verdicts.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(line)


def write_many(log_dir: Path, count: int) -> list[str]:
    """``count`` verdicts cycling through the decisions, oldest first."""
    log_dir.mkdir(parents=True, exist_ok=True)
    return [write_verdict(log_dir, n, decision=DECISIONS[n % len(DECISIONS)]) for n in range(count)]


@contextlib.contextmanager
def running_view(
    log_dir: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, list[str]]]:
    """``patchwarden view`` on a free loopback port: its base URL and its stderr lines
    (drained by a thread, so warnings never block the server)."""
    proc = subprocess.Popen(
        ["patchwarden", "view", "--log-dir", str(log_dir), "--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    lines: list[str] = []
    started = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            started.set()
        started.set()

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    try:
        started.wait(STARTUP_SECONDS)
        found = re.search(r" at (http://\S+/) ", lines[0]) if lines else None
        if found is None:
            raise AssertionError(f"patchwarden view did not start: {''.join(lines)!r}")
        yield found.group(1), lines
    finally:
        proc.terminate()
        try:
            proc.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        thread.join(STOP_SECONDS)
        proc.stderr.close()


STARTUP_SECONDS = 30
"""Starting uvicorn takes well under a second; a loaded CI machine gets room."""
STOP_SECONDS = 10


def write_held_out_reject(log_dir: Path, n: int) -> str:
    """A verdict the gate accepted and the held-out property rejected (``decided_by``:
    held_out); its id."""
    return write_verdict(
        log_dir,
        n,
        decision="reject",
        gate_decision="accept",
        props=("prop.clamp_above",),
        results={"prop.clamp_above": ("accept", "parent_fail_cleared")},
        held_out=("held.clamp_above_anywhere",),
        held_out_decision="reject",
    )
