"""The verdict index for the reviewer's view, read incrementally.

``verdicts.jsonl`` is append-only; its reader is the scorer's (``IndexCursor``,
scorer/_index.py), one policy for every reader (docs/reliability.md, "The verdict index").
The view keeps the cursor and, on each request, takes only the lines appended since: a
list of thousands of verdicts costs one ``stat`` when nothing changed. A torn last line is
a warning naming ``file:line``, logged and shown on the page; any other bad line raises the
cursor's ``InputError``, which the view answers with an error page naming ``file:line``
(a reviewer never sees a silently shorter list). A second line for a verdict id already
listed is a warning too: the first is kept.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchwarden.scorer import VERDICT_ID, VERDICTS_DIR, IndexCursor, Indexed, reason_counts

_ID_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z")

log = logging.getLogger("patchwarden.view")


@dataclass(frozen=True)
class IndexEntry:
    """One usable index line."""

    verdict_id: str
    line: int
    decision: str
    gate_decision: str
    parent_sha: str
    patch_sha: str
    time: str
    """``YYYY-MM-DD HH:MM:SSZ``: the line's ``time`` field, else the stamp the id starts with."""
    reasons: tuple[tuple[str, int], ...]
    """Reason codes of the per-property results with their counts, the deciding ones first
    (scorer/_index.py ``reason_counts``)."""
    decided_by: tuple[str, ...] = ()
    """What decided the verdict (the index line's ``decided_by``, scorer/_index.py)."""


def entry_time(raw: dict[str, Any], verdict_id: str) -> str:
    for key in ("time", "scored_at", "created_at"):
        if isinstance(raw.get(key), str):
            return str(raw[key])
    stamp = _ID_STAMP.match(verdict_id)
    if stamp is None:
        return ""
    y, mo, d, h, mi, s = stamp.groups()
    return f"{y}-{mo}-{d} {h}:{mi}:{s}Z"


@dataclass
class _State:
    entries: list[IndexEntry] = field(default_factory=list)
    by_id: dict[str, IndexEntry] = field(default_factory=dict)
    decisions: Counter[str] = field(default_factory=Counter)
    skipped: list[str] = field(default_factory=list)
    torn: str = ""


@dataclass(frozen=True)
class IndexSnapshot:
    """What the index held at one refresh; lists are newest first."""

    entries: tuple[IndexEntry, ...]
    by_id: dict[str, IndexEntry]
    decisions: dict[str, int]
    warnings: tuple[str, ...]

    def filtered(self, decision: str | None) -> tuple[IndexEntry, ...]:
        if decision is None:
            return self.entries
        return tuple(e for e in self.entries if e.decision == decision)


class IndexReader:
    """Incremental reader of one log directory's ``verdicts.jsonl``; thread-safe."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._cursor = IndexCursor(log_dir)
        self.path = self._cursor.path
        self._lock = threading.Lock()
        self._state = _State()
        self._snapshot = IndexSnapshot((), {}, {}, ())

    def snapshot(self) -> IndexSnapshot:
        """Take whatever was appended since the last call; return the whole index. A bad
        line raises ``InputError`` naming file:line, on this call and every later one."""
        with self._lock:
            appended = self._cursor.read()
            if appended.restarted:
                # A new or truncated file is a new index: start over rather than mix two.
                self._state = _State()
            state = self._state
            torn = appended.torn or ""
            if not (appended.lines or appended.restarted or torn != state.torn):
                return self._snapshot
            for indexed in appended.lines:
                self._take(indexed, state)
            if torn and torn != state.torn:
                log.warning("%s", torn)
            state.torn = torn
            self._snapshot = IndexSnapshot(
                entries=tuple(reversed(state.entries)),
                by_id=dict(state.by_id),
                decisions=dict(state.decisions),
                warnings=(*state.skipped, *([torn] if torn else [])),
            )
            return self._snapshot

    def _take(self, indexed: Indexed, state: _State) -> None:
        line = indexed.line
        verdict_id = line.verdict_id
        if verdict_id in state.by_id:
            first = state.by_id[verdict_id].line
            message = (
                f"{self.path}:{indexed.number}: skipped: verdict {verdict_id} again "
                f"(first on line {first}); kept the first"
            )
            log.warning("%s", message)
            state.skipped.append(message)
            return
        item = IndexEntry(
            verdict_id=verdict_id,
            line=indexed.number,
            decision=line.decision or "?",
            gate_decision=line.gate_decision or "",
            parent_sha=line.parent_sha or "",
            patch_sha=line.patch_sha or "",
            time=entry_time(line.model_extra or {}, verdict_id),
            reasons=tuple(reason_counts(line.results)),
            decided_by=tuple(line.decided()),
        )
        state.entries.append(item)
        state.by_id[verdict_id] = item
        state.decisions[item.decision] += 1


def bundle_dir(log_dir: Path, verdict_id: str) -> Path:
    """Where an indexed verdict's bundle is: always under ``log_dir/verdicts/``.

    The index line's ``bundle`` field is not followed: a log directory that was moved or
    copied (a CI artefact) still reads, and no line can point the view elsewhere.
    """
    if not VERDICT_ID.match(verdict_id):
        raise ValueError(f"not a verdict id: {verdict_id!r}")
    return log_dir / VERDICTS_DIR / verdict_id
