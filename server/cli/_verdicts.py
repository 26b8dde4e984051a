"""``patchwarden verdicts list|show|export``: the verdict logs as tables, or as HTML files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from patchwarden.scorer import (
    IndexLine,
    VerdictBundle,
    decided_by,
    deciding_first,
    load_verdict,
    marked_decision,
    read_index,
    reason_counts,
    review_findings,
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
"""Evidence lines per check in ``verdicts show``; scorecard.json has them all. The
``differential`` check shows every line of a row that did not accept besides (they lead)."""


def _reasons(results: Any) -> str:
    return ", ".join(f"{n} {r}" for r, n in reason_counts(results)) or "-"


HIDDEN_LABELS = {"extra_seeds": "extra seeds", "held_out": "held out"}


def _sections(decision: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The gates of decision.json: the contract's (its top level), then each hidden group's
    section, with the label its rows carry."""
    found = [("", decision)]
    for group, label in HIDDEN_LABELS.items():
        section = decision.get(group)
        if isinstance(section, dict):
            found.append((f" ({label})", section))
    return found


def _property_rows(decision: dict[str, Any]) -> list[dict[str, Any]]:
    """Every gate's per-property results (hidden ones marked with their group), the deciding
    ones first."""
    rows = []
    for label, section in _sections(decision):
        results = section.get("results")
        for r in results if isinstance(results, list) else []:
            if isinstance(r, dict):
                rows.append({**r, "prop": f"{r.get('prop', '-')}{label}"})
    return deciding_first(rows, lambda r: r.get("decision"))


def _decision_line(d: dict[str, Any]) -> str:
    """``reject (decided by held_out; gate: accept)``: what decided comes from the verdict's
    ``decided_by`` (scorer/_index.py), as the review note and ``verdicts list`` have it. An
    accept with review findings is ``accept* (review findings: suspicious)``."""
    decision = str(d.get("decision"))
    gate = d.get("gate_decision", decision)
    details = []
    decided = decided_by(d)
    findings = review_findings(d)
    if decided:
        details.append(f"decided by {', '.join(decided)}")
    if decision == "accept" and findings:
        details.append(f"review findings: {', '.join(findings)}")
    if gate != decision:
        details.append(f"gate: {gate}")
    shown = marked_decision(decision, findings)
    return shown + (f" ({'; '.join(details)})" if details else "")


def _findings(entry: IndexLine, directory: Path) -> list[str]:
    """The review findings of an index line: stored with it, else (a line written before
    they were) read from its bundle's decision.json; [] when that cannot be read."""
    if entry.findings is not None:
        return review_findings(entry.to_json())
    try:
        text = (directory / "verdicts" / entry.verdict_id / "decision.json").read_text()
        record = json.loads(text)
    except (OSError, ValueError):
        return []
    return review_findings(record) if isinstance(record, dict) else []


def _show_text(bundle: VerdictBundle) -> str:
    d = bundle.decision
    head = [
        ["verdict", bundle.verdict_id],
        ["decision", _decision_line(d)],
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
    results = _property_rows(d)
    rows = [
        [printable(str(r.get(k, "-"))) for k in ("prop", "decision", "reason")] for r in results
    ]
    parts.append(
        table(("PROPERTY", "DECISION", "REASON"), rows)
        if rows
        else "properties: none (gate skipped)"
    )
    leading = sum(r.get("decision") != "accept" for r in results)
    leading += sum(bool(section.get("skip_reason")) for _, section in _sections(d))
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
        limit = EVIDENCE_LINES_SHOWN
        if check.get("check") == "differential":
            limit = max(limit, leading)
        shown = evidence[:limit] or ["-"]
        if len(evidence) > limit:
            shown.append(f"(+{len(evidence) - limit} more in scorecard.json)")
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
    findings = {e.verdict_id: _findings(e, directory) for e in entries}
    rows = [
        [
            printable(e.verdict_id),
            marked_decision(e.decision, findings[e.verdict_id]) if e.decision else "-",
            printable(", ".join(e.decided())) or "-",
            e.gate_decision or "-",
            (e.patch_sha or "-")[:12],
            (e.parent_sha or "-")[:12],
            printable(", ".join(findings[e.verdict_id])) or "-",
            printable(_reasons(e.results)),
        ]
        for e in entries
    ]
    headers = (
        "VERDICT", "DECISION", "DECIDED BY", "GATE", "PATCH", "PARENT", "FINDINGS", "REASONS"
    )  # fmt: skip
    click.echo(table(headers, rows))
    click.echo(f"{len(entries)} verdicts; bundles under {directory / 'verdicts'}")
    if any(e.decision == "accept" and findings[e.verdict_id] for e in entries):
        click.echo("accept*: an accept with review findings, for a person to look at")


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
