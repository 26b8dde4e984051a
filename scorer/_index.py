"""The verdict index, ``verdicts.jsonl``: its name, its line, its one writer and its one
reader (docs/reliability.md, "The verdict index").

One JSON object per verdict, appended whole (one ``write`` of line and newline under an
exclusive lock: ``append_line``) after the bundle is in place (scorer/_bundle.py). Every
reader (``verdicts list``, ``score-batch`` resume, the reviewer's view) goes through
:class:`IndexCursor`, which parses what was appended since its last read under a shared
lock, with one policy:

- only text that ends in a newline is a line. Text after the last newline is the torn last
  line of a writer that died mid-write: it is skipped, with a warning naming ``file:line``
  (its verdict was never delivered: a bundle is published only after its line is
  appended). The next writer cuts it off.
- any other line that is not an index line (not JSON, not an object, no usable
  ``verdict_id``, a field of the wrong type) is an :class:`InputError` naming
  ``file:line``: no reader shows a silently shorter list.

What decided a verdict is worked out once, by :func:`derive_decided_by` when the scorer
writes it, and stored as ``decided_by`` in both the index line and ``decision.json``; every
reader (``verdicts list`` and ``show``, the view's list and pages) takes it from there with
:func:`decided_by`, so none of them can tell a different story from the review note.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ._append import append_line
from ._errors import InputError
from ._groups import HIDDEN_GROUPS
from .gate import deciding_first

INDEX = "verdicts.jsonl"
"""The index's file name in the log directory."""

VERDICT_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_.-]{0,127}$")
"""What a verdict id may be: it names a directory under ``verdicts/`` and a URL segment, so
no slash and no leading dot (an index line can never name a path outside ``verdicts/``)."""


class IndexLine(BaseModel):
    """One line of the index: what ``verdicts list`` shows and what resume compares."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True)

    verdict_id: str
    request_id: str | None = None
    """The ``score-batch`` request the verdict answers."""
    decision: str | None = None
    gate_decision: str | None = None
    parent_sha: str | None = None
    patch_sha: str | None = None
    contract_hash: str | None = None
    resolved_contract_hash: str | None = None
    results: list[dict[str, Any]] | None = None
    """The contract gate's per-property results."""
    hidden: dict[str, str] | None = None
    """The hidden groups' decisions, by group."""
    decided_by: list[str] | None = None
    """What decided a verdict that is not an accept (:func:`derive_decided_by`); None on
    lines written before it was recorded."""
    bundle: str | None = None
    """Where the bundle was published (readers look under ``verdicts/<id>`` instead)."""
    findings: list[str] | None = None
    """The scorecard checks at ``review`` (:func:`review_findings`); None on lines written
    before they were recorded (readers take them from the bundle's ``decision.json``)."""

    def to_json(self) -> dict[str, Any]:
        """The line as written: the fields it has, keys sorted."""
        return dict(sorted(self.model_dump(exclude_unset=True).items()))

    def decided(self) -> list[str]:
        """What decided this verdict (:func:`decided_by`)."""
        return decided_by(self.to_json())


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def derive_decided_by(record: Mapping[str, Any]) -> list[str]:
    """What decided a verdict, from its ``decision.json`` (or an index line, which lacks the
    scorecard): nothing for an accept; else, in this order and each once, the reason codes
    of the contract's rows that have the verdict's decision (``regression``,
    ``missing_seed``, ``shared_variant_fail``) or its gate's skip reason (``no_parent``),
    when that gate has the verdict's decision; each hidden group that has it (``held_out``,
    ``extra_seeds``; not a group skipped beside a skipped contract gate); and, for a reject,
    each scorecard check that rejected (``contract_tampered``; the ``differential`` check is
    the gates above)."""
    decision = record.get("decision")
    if not isinstance(decision, str) or decision == "accept":
        return []
    found: list[str] = []
    gate = record.get("gate_decision", decision)
    if gate == decision:
        skip = record.get("skip_reason")
        if decision == "skipped" and isinstance(skip, str) and skip:
            found.append(skip)
        found += [
            str(r.get("reason", "?"))
            for r in _dicts(record.get("results"))
            if r.get("decision") == decision
        ]
    hidden = record.get("hidden")
    for group in HIDDEN_GROUPS:
        section = record.get(group)
        if isinstance(section, dict):
            group_decision = section.get("decision")
        else:
            group_decision = hidden.get(group) if isinstance(hidden, dict) else None
        if group_decision == decision and not (decision == "skipped" and gate == "skipped"):
            found.append(group)
    if decision == "reject":
        found += [
            str(c.get("check", "?"))
            for c in _dicts(record.get("scorecard"))
            if c.get("outcome") == "reject" and c.get("check") != "differential"
        ]
    return list(dict.fromkeys(found))


def review_findings(record: Mapping[str, Any]) -> list[str]:
    """The scorecard checks of ``record`` (a ``decision.json``, or an index line that stored
    them) whose outcome is ``review``: an accept that carries one is for a person to look at,
    never a clean accept (``verdicts list`` shows it as ``accept*``). The ``differential``
    check is the gates, which the decision and its reasons already say."""
    stored = record.get("findings")
    if isinstance(stored, list) and all(isinstance(s, str) for s in stored):
        return list(stored)
    return list(
        dict.fromkeys(
            str(c.get("check", "?"))
            for c in _dicts(record.get("scorecard"))
            if c.get("outcome") == "review" and c.get("check") != "differential"
        )
    )


def marked_decision(decision: str, findings: Sequence[str]) -> str:
    """``accept*`` for an accept with review findings (what a reader must not take for a
    clean accept); any other decision as it is."""
    return f"{decision}*" if decision == "accept" and findings else decision


def decided_by(record: Mapping[str, Any]) -> list[str]:
    """What decided the verdict of ``record`` (an index line or a ``decision.json``): the
    ``decided_by`` the scorer stored, else (a verdict written before it was stored)
    :func:`derive_decided_by` of what the record holds."""
    stored = record.get("decided_by")
    if isinstance(stored, list) and all(isinstance(s, str) for s in stored):
        return list(stored)
    return derive_decided_by(record)


def reason_counts(results: Any) -> list[tuple[str, int]]:
    """The per-property reason codes with their counts, the deciding ones first
    (``[("regression", 1), ("both_pass", 57)]``)."""
    counts: dict[str, int] = {}
    for result in deciding_first(_dicts(results), lambda r: r.get("decision")):
        reason = str(result.get("reason", "?"))
        counts[reason] = counts.get(reason, 0) + 1
    return list(counts.items())


def append_index(log_dir: Path, line: IndexLine) -> None:
    """One whole line at the end of the index, whoever else is appending."""
    data = (json.dumps(line.to_json(), sort_keys=True) + "\n").encode("utf-8")
    append_line(log_dir / INDEX, data, mode=0o644)


def parse_line(raw: bytes, where: str) -> IndexLine:
    """One line of the index (without its newline); an InputError naming ``where``."""
    try:  # the common case, in one pass (pydantic parses the JSON itself)
        line = IndexLine.model_validate_json(raw)
    except ValidationError:
        return _diagnosed(raw, where)
    if not VERDICT_ID.match(line.verdict_id):
        return _diagnosed(raw, where)
    return line


def _diagnosed(raw: bytes, where: str) -> IndexLine:
    """``raw`` read step by step: the line, or the InputError of the first thing wrong."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", where=where) from None
    try:
        entry = json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError, huge integers, deep nesting
        raise InputError("not a JSON object", where=where) from None
    if not isinstance(entry, dict):
        raise InputError("not a JSON object", where=where)
    verdict_id = entry.get("verdict_id")
    if not isinstance(verdict_id, str):
        raise InputError("index line without a verdict_id", where=where)
    if not VERDICT_ID.match(verdict_id):
        raise InputError(f"verdict_id {verdict_id[:80]!r} is not a usable id", where=where)
    try:
        return IndexLine.model_validate(entry)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InputError(f"{field}: {first['msg']}", where=where) from None


@dataclass(frozen=True)
class Indexed:
    """An index line and its line number in the file (from 1)."""

    number: int
    line: IndexLine


@dataclass(frozen=True)
class Appended:
    """What one read of the index found."""

    lines: tuple[Indexed, ...]
    torn: str | None
    """The warning for a torn last line (``FILE:LINE: skipped ...``), if there is one."""
    restarted: bool
    """The file is not the one read before (replaced, truncated or removed): ``lines``
    is the whole new index, and what the caller kept from earlier reads is stale."""


TORN = "skipped a torn last line (an interrupted write)"


class IndexCursor:
    """Reads one index from where the last read stopped; thread-safe."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / INDEX
        self._identity: tuple[int, int] | None = None
        self._offset = 0
        """Bytes taken: the whole lines read so far."""
        self._lines = 0
        self._seen: tuple[int, int, str | None] = (0, 0, None)
        """The file's size and mtime at the last read, and the torn-line warning it gave."""
        self._lock = threading.Lock()

    def read(self) -> Appended:
        """The lines appended since the last read. A bad line raises before anything is
        taken from this read, so every later read raises it again."""
        with self._lock:
            with contextlib.suppress(OSError):  # nothing new: one stat (else read and see)
                stat = os.stat(self.path)
                same = (stat.st_dev, stat.st_ino) == self._identity
                if same and (stat.st_size, stat.st_mtime_ns) == self._seen[:2]:
                    return Appended((), self._seen[2], False)
            try:
                handle = self.path.open("rb")
            except FileNotFoundError:
                restarted = self._identity is not None
                self._identity, self._offset, self._lines = None, 0, 0
                self._seen = (0, 0, None)
                return Appended((), None, restarted)
            except OSError as exc:
                raise InputError(
                    f"cannot read the verdict index: {exc.strerror or exc}", where=str(self.path)
                ) from None
            with handle:
                try:
                    # Writers append whole lines under an exclusive lock (append_line).
                    fcntl.flock(handle, fcntl.LOCK_SH)
                    stat = os.fstat(handle.fileno())
                    identity = (stat.st_dev, stat.st_ino)
                    restarted = identity != self._identity or stat.st_size < self._offset
                    offset, lines = (0, 0) if restarted else (self._offset, self._lines)
                    handle.seek(offset)
                    data = handle.read()
                except OSError as exc:
                    raise InputError(
                        f"cannot read the verdict index: {exc.strerror or exc}",
                        where=str(self.path),
                    ) from None
            end = data.rfind(b"\n") + 1
            found = []
            for raw in data[:end].split(b"\n")[:-1]:
                lines += 1
                if raw.strip():
                    found.append(Indexed(lines, parse_line(raw, f"{self.path}:{lines}")))
            torn = f"{self.path}:{lines + 1}: {TORN}" if data[end:].strip() else None
            self._identity, self._offset, self._lines = identity, offset + end, lines
            self._seen = (offset + len(data), stat.st_mtime_ns, torn)
            return Appended(tuple(found), torn, restarted)


def warn_on_stderr(message: str) -> None:
    print(f"patchwarden: warning: {message}", file=sys.stderr, flush=True)


def read_index(log_dir: Path, warn: Callable[[str], None] = warn_on_stderr) -> list[IndexLine]:
    """Every line of the index, oldest first; none when there is no index. ``warn`` gets
    the warning of a torn last line."""
    appended = IndexCursor(log_dir).read()
    if appended.torn is not None:
        warn(appended.torn)
    return [indexed.line for indexed in appended.lines]
