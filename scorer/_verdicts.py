"""Reading one verdict's bundle back from the reviewers' log directory, for
``patchwarden verdicts show`` (the index is scorer/_index.py's).

The writer is :mod:`scorer._bundle`; this module only reads. A malformed file is an input
error naming it, never a silently shorter answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchwarden._documents import parse_document

from ._bundle import VERDICTS_DIR
from ._errors import InputError
from .layers import Ticket, read_ticket, ticket_path

NOTE_FILE = "review-note.txt"


@dataclass(frozen=True)
class VerdictBundle:
    """One verdict's evidence, as written under ``verdicts/<id>/``."""

    verdict_id: str
    path: Path
    decision: dict[str, Any]
    scorecard: list[dict[str, Any]]
    note: list[str]
    files: list[str]
    ticket: Ticket | None
    ticket_file: Path | None


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("missing from the bundle", where=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", where=str(path)) from None
    return parse_document(text, str(path), json_only=True)


def resolve_verdict_id(log_dir: Path, wanted: str) -> str:
    """The verdict id ``wanted`` names: itself, or the one verdict it is a prefix of."""
    root = log_dir / VERDICTS_DIR
    if not wanted or "/" in wanted or wanted.startswith("."):
        raise InputError(f"not a verdict id: {wanted!r}")
    if (root / wanted).is_dir():
        return wanted
    known = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    matches = [name for name in known if not name.startswith(".") and name.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise InputError(f"{wanted!r} names {len(matches)} verdicts; give more of the id")
    raise InputError(f"no verdict {wanted!r}", where=str(root))


def load_verdict(log_dir: Path, wanted: str) -> VerdictBundle:
    verdict_id = resolve_verdict_id(log_dir, wanted)
    path = log_dir / VERDICTS_DIR / verdict_id
    decision = _read_json(path / "decision.json")
    scorecard = _read_json(path / "scorecard.json")
    if not isinstance(decision, dict) or not isinstance(scorecard, list):
        raise InputError("decision.json or scorecard.json has the wrong shape", where=str(path))
    try:
        note = (path / NOTE_FILE).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the review note: {exc}", where=str(path)) from None
    files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())
    ticket_id = decision.get("ticket")
    ticket: Ticket | None = None
    ticket_at: Path | None = None
    if isinstance(ticket_id, str):
        ticket_at = ticket_path(log_dir, ticket_id)
        # An expired ticket is deleted by ``freeze expire``: gone is an answer, not an error.
        ticket = read_ticket(log_dir, ticket_id) if ticket_at.is_file() else None
    return VerdictBundle(
        verdict_id=verdict_id,
        path=path,
        decision=decision,
        scorecard=[c for c in scorecard if isinstance(c, dict)],
        note=note,
        files=files,
        ticket=ticket,
        ticket_file=ticket_at,
    )
