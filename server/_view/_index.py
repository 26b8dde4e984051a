"""The verdict index, read incrementally and tolerantly for the reviewer's view.

``verdicts.jsonl`` is append-only (scorer/_bundle.py). The view keeps the byte
offset it has parsed up to and, on each request, parses only the bytes appended
since: a list of thousands of verdicts costs one ``stat`` when nothing changed.
Only whole lines (ending in a newline: the writer appends line and newline in one
write under a lock) are parsed; an unterminated tail is left for the next read and
reported, since it is either being written or was torn by a crash.

Unlike ``verdicts list`` (which refuses a malformed index), the view skips a line it
cannot use with a warning naming ``file:line``, logged and shown on the page: a
reviewer still sees every other verdict, and sees that one line is missing.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INDEX_FILE = "verdicts.jsonl"
VERDICTS_DIR = "verdicts"

VERDICT_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_.-]{0,127}$")
"""Ids the view will turn into a directory name and a URL segment: no slash, no leading
dot, so an index line can never name a path outside ``verdicts/``."""
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
    """Reason codes of the per-property results with their counts, in first-seen order."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def entry_time(raw: dict[str, Any], verdict_id: str) -> str:
    for key in ("time", "scored_at", "created_at"):
        if isinstance(raw.get(key), str):
            return str(raw[key])
    stamp = _ID_STAMP.match(verdict_id)
    if stamp is None:
        return ""
    y, mo, d, h, mi, s = stamp.groups()
    return f"{y}-{mo}-{d} {h}:{mi}:{s}Z"


def reason_counts(results: Any) -> tuple[tuple[str, int], ...]:
    counts: Counter[str] = Counter()
    if isinstance(results, list):
        for result in results:
            if isinstance(result, dict):
                counts[str(result.get("reason", "?"))] += 1
    return tuple(counts.items())


@dataclass
class _State:
    identity: tuple[int, int] | None = None
    offset: int = 0
    lines: int = 0
    entries: list[IndexEntry] = field(default_factory=list)
    by_id: dict[str, IndexEntry] = field(default_factory=dict)
    decisions: Counter[str] = field(default_factory=Counter)
    skipped: list[str] = field(default_factory=list)
    tail: str = ""


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
        self.path = log_dir / INDEX_FILE
        self._lock = threading.Lock()
        self._state = _State()
        self._snapshot = IndexSnapshot((), {}, {}, ())

    def snapshot(self) -> IndexSnapshot:
        """Parse whatever was appended since the last call; return the whole index."""
        with self._lock:
            if self._read_appended():
                state = self._state
                warnings = list(state.skipped)
                if state.tail:
                    warnings.append(state.tail)
                self._snapshot = IndexSnapshot(
                    entries=tuple(reversed(state.entries)),
                    by_id=dict(state.by_id),
                    decisions=dict(state.decisions),
                    warnings=tuple(warnings),
                )
            return self._snapshot

    def _read_appended(self) -> bool:
        """Whether anything changed."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            changed = self._state.identity is not None
            self._state = _State()
            return changed
        identity = (stat.st_dev, stat.st_ino)
        state = self._state
        if identity != state.identity or stat.st_size < state.offset:
            # A new or truncated file is a new index: start over rather than mix two.
            state = self._state = _State(identity=identity)
        if stat.st_size == state.offset and state.lines:
            return False
        try:
            with self.path.open("rb") as handle:
                handle.seek(state.offset)
                data = handle.read(stat.st_size - state.offset)
        except OSError as exc:
            # Shown on the page and tried again on the next request, never a blank list.
            state.tail = f"{self.path}: cannot read the index: {exc.strerror}"
            return True
        end = data.rfind(b"\n")
        whole = data[: end + 1] if end >= 0 else b""
        state.offset += len(whole)
        for raw in whole.split(b"\n")[:-1]:
            state.lines += 1
            self._take(raw, state)
        rest = data[end + 1 :]
        state.tail = (
            f"{self.path}:{state.lines + 1}: last line has no end of line "
            "(torn, or still being written); not shown"
            if rest.strip()
            else ""
        )
        return True

    def _take(self, raw: bytes, state: _State) -> None:
        where = f"{self.path}:{state.lines}"
        if not raw.strip():
            return
        problem = ""
        entry: Any = None
        try:
            entry = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            problem = "not a JSON object (a torn or corrupted line)"
        if not problem and not isinstance(entry, dict):
            problem = "not a JSON object"
        elif not problem and not isinstance(entry.get("verdict_id"), str):
            problem = "no verdict_id"
        elif not problem and not VERDICT_ID.match(entry["verdict_id"]):
            problem = f"verdict_id {entry['verdict_id'][:80]!r} is not a usable id"
        elif not problem and entry["verdict_id"] in state.by_id:
            first = state.by_id[entry["verdict_id"]].line
            problem = f"verdict {entry['verdict_id']} again (first on line {first}); kept the first"
        if problem:
            message = f"{where}: skipped: {problem}"
            log.warning("%s", message)
            state.skipped.append(message)
            return
        verdict_id = entry["verdict_id"]
        item = IndexEntry(
            verdict_id=verdict_id,
            line=state.lines,
            decision=_text(entry.get("decision")) or "?",
            gate_decision=_text(entry.get("gate_decision")),
            parent_sha=_text(entry.get("parent_sha")),
            patch_sha=_text(entry.get("patch_sha")),
            time=entry_time(entry, verdict_id),
            reasons=reason_counts(entry.get("results")),
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
