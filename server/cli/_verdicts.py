"""``patchwarden verdicts list|show|export``: the verdict logs as tables, or as HTML files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from patchwarden.scorer import (
    VerdictBundle,
    load_verdict,
    read_index,
)

from ._base import (
    OneLineGroup,
    config_option,
    json_option,
    log_dir_of,
    log_dir_option,
    printable,
    table,
)

EVIDENCE_LINES_SHOWN = 12
"""Evidence lines per check in ``verdicts show``; scorecard.json has them all."""


def _reasons(results: Any) -> str:
    if not isinstance(results, list):
        return "-"
    counts: dict[str, int] = {}
    for result in results:
        if isinstance(result, dict):
            reason = str(result.get("reason", "?"))
            counts[reason] = counts.get(reason, 0) + 1
    return ", ".join(f"{n} {r}" for r, n in counts.items()) or "-"


HIDDEN_LABELS = {"extra_seeds": "extra seeds", "held_out": "held out"}


def _hidden_rows(decision: dict[str, Any]) -> list[list[str]]:
    """The hidden groups' results (never shown to the agent), each marked with its group."""
    rows = []
    for group, label in HIDDEN_LABELS.items():
        section = decision.get(group)
        if not isinstance(section, dict):
            continue
        for r in section.get("results", []):
            if isinstance(r, dict):
                prop = f"{r.get('prop', '-')} ({label})"
                rows.append([printable(str(v)) for v in (prop, r.get("decision"), r.get("reason"))])
    return rows


def _show_text(bundle: VerdictBundle) -> str:
    d = bundle.decision
    gate = d.get("gate_decision", d.get("decision"))
    head = [
        ["verdict", bundle.verdict_id],
        ["decision", f"{d.get('decision')} (gate: {gate})"],
        ["contract", str(d.get("contract_hash", "-"))],
        ["resolved contract", str(d.get("resolved_contract_hash", "-"))],
        ["parent", str(d.get("parent_sha", "-"))],
        ["patch", str(d.get("patch_sha", "-"))],
    ]
    if bundle.ticket is not None:
        t = bundle.ticket
        expiry = f", expires {t.expires}, {t.reason_code}" if t.expires else ""
        head.append(["ticket", f"{t.ticket_id} ({t.status}{expiry}) {bundle.ticket_file}"])
    elif bundle.ticket_file is not None:
        head.append(["ticket", f"deleted (expired): {bundle.ticket_file}"])
    parts = ["\n".join(f"{k:<9} {printable(v)}" for k, v in head)]
    results = [r for r in d.get("results", []) if isinstance(r, dict)]
    rows = [
        [printable(str(r.get(k, "-"))) for k in ("prop", "decision", "reason")] for r in results
    ]
    rows += _hidden_rows(d)
    parts.append(
        table(("PROPERTY", "DECISION", "REASON"), rows)
        if rows
        else "properties: none (gate skipped)"
    )
    counts = d.get("counts", {})
    parts.append(
        table(
            ("ROWS", "LINES", "PASS", "FAIL", "IGNORED"),
            [
                [
                    side,
                    *(
                        str(counts.get(side, {}).get(k, "-"))
                        for k in ("lines", "pass", "fail", "ignored")
                    ),
                ]
                for side in ("parent", "patch")
            ],
        )
    )
    rows = []
    for check in bundle.scorecard:
        evidence = [str(e) for e in check.get("evidence", [])]
        shown = evidence[:EVIDENCE_LINES_SHOWN] or ["-"]
        if len(evidence) > EVIDENCE_LINES_SHOWN:
            shown.append(f"(+{len(evidence) - EVIDENCE_LINES_SHOWN} more in scorecard.json)")
        for i, line in enumerate(shown):
            first = i == 0
            rows.append(
                [
                    str(check.get("check", "?")) if first else "",
                    str(check.get("outcome", "?")) if first else "",
                    printable(line),
                ]
            )
    parts.append(table(("CHECK", "OUTCOME", "EVIDENCE"), rows))
    parts.append(
        "review note (review-note.txt):\n" + "\n".join(f"  {printable(n)}" for n in bundle.note)
    )
    parts.append(f"files: {bundle.path}\n" + "\n".join(f"  {f}" for f in bundle.files))
    return "\n\n".join(parts)


@click.group("verdicts", cls=OneLineGroup)
def verdicts_group() -> None:
    """Read the verdicts in the log directory (docs/reviewer-guide.md)."""


@verdicts_group.command("list")
@log_dir_option
@json_option
@config_option
def list_cmd(log_dir: Path | None, as_json: bool, config_path: Path | None) -> None:
    """Every verdict in verdicts.jsonl, oldest first."""
    directory = log_dir_of(config_path, log_dir)
    entries = read_index(directory)
    if as_json:
        click.echo(json.dumps([e.to_json() for e in entries], indent=2))
        return
    if not entries:
        click.echo(f"no verdicts in {directory}")
        return
    rows = [
        [
            printable(e.verdict_id),
            e.decision or "-",
            e.gate_decision or "-",
            (e.patch_sha or "-")[:12],
            (e.parent_sha or "-")[:12],
            printable(_reasons(e.results)),
        ]
        for e in entries
    ]
    click.echo(table(("VERDICT", "DECISION", "GATE", "PATCH", "PARENT", "REASONS"), rows))
    click.echo(f"{len(entries)} verdicts; bundles under {directory / 'verdicts'}")


@verdicts_group.command("show")
@click.argument("verdict_id")
@log_dir_option
@json_option
@config_option
def show_cmd(
    verdict_id: str, log_dir: Path | None, as_json: bool, config_path: Path | None
) -> None:
    """One verdict: decision, reasons per property, row counts, the scorecard with its
    evidence, the review note and where the files are. VERDICT_ID may be a prefix."""
    bundle = load_verdict(log_dir_of(config_path, log_dir), verdict_id)
    if as_json:
        out: dict[str, Any] = {
            "verdict_id": bundle.verdict_id,
            "bundle": str(bundle.path),
            "decision": bundle.decision,
            "scorecard": bundle.scorecard,
            "review_note": bundle.note,
            "files": bundle.files,
        }
        if bundle.ticket is not None:
            out["ticket"] = bundle.ticket.model_dump(mode="json")
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(_show_text(bundle))


@verdicts_group.command("export")
@log_dir_option
@click.option(
    "--html",
    "html_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory for the pages: new, empty, or an earlier export (replaced whole).",
)
@config_option
def export_cmd(log_dir: Path | None, html_dir: Path, config_path: Path | None) -> None:
    """The pages of `patchwarden view` as static files with relative links (a CI
    artefact): the list, one page per verdict with its files, the tickets."""
    from .._view import export_site

    result = export_site(log_dir_of(config_path, log_dir), html_dir)
    for warning in result.warnings:
        click.echo(f"patchwarden: warning: {warning}", err=True)
    click.echo(
        f"exported {result.verdicts} verdicts ({result.pages} pages) to {result.out / 'index.html'}"
    )
