"""Reading the reviewers' log directory: the verdict index and one verdict's bundle.

The writer is :mod:`scorer._bundle`; this module only reads, for
``patchwarden verdicts list|show``. A malformed line or file is an input
error naming the file and line, never a silently shorter list.
"""

from __future__ import annotations

import fcntl
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchwarden._documents import parse_document

from ._bundle import INDEX, VERDICTS_DIR
from ._errors import InputError
from .layers import Ticket, read_ticket, ticket_path

NOTE_FILE = "review-note.txt"


def _warn_on_stderr(message: str) -> None:
    print(f"patchwarden: warning: {message}", file=sys.stderr, flush=True)


def read_index(
    log_dir: Path, warn: Callable[[str], None] = _warn_on_stderr
) -> list[dict[str, Any]]:
    """Every line of ``verdicts.jsonl``, oldest first; none when there is no index.

    A last line without its newline that does not parse is a write that was cut short
    (a crash mid-append): it is skipped, and ``warn`` gets one line naming file:line. Its
    verdict was never delivered (scorer/_bundle.py publishes only after the append). Any
    other malformed line is an input error.
    """
    path = log_dir / INDEX
    try:
        with path.open("rb") as handle:
            # Writers append whole lines under an exclusive lock (scorer/_bundle.py).
            fcntl.flock(handle, fcntl.LOCK_SH)
            text = handle.read().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(
            f"cannot read the verdict index: {exc.strerror or exc}", where=str(path)
        ) from None
    entries = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        torn = number == len(lines)  # the text after the last newline
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError, huge integers, deep nesting
            if torn:
                warn(f"{path}:{number}: skipped a torn last line (an interrupted write)")
                continue
            raise InputError("not a JSON object", where=f"{path}:{number}") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("verdict_id"), str):
            raise InputError("index line without a verdict_id", where=f"{path}:{number}")
        entries.append(entry)
    return entries


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
