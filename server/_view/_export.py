"""``patchwarden verdicts export --html OUT``: the view's pages as static files.

The same templates as the live view, linked by relative file names, for a CI artefact
or a mail attachment:

    OUT/index.html                       the list, newest first (list-<decision>-<n>.html more)
    OUT/tickets.html                     the freeze tickets
    OUT/verdicts/<id>/index.html         one page per verdict
    OUT/verdicts/<id>/files/<name>       a copy of every file of its bundle
    OUT/view.css                         the stylesheet

The export is built beside OUT and renamed into place, so OUT is either the previous
export or the new one, never half of each. OUT must be new, empty or an earlier export,
and apart from the log directory: the export never writes into the evidence.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from patchwarden import ConfigError
from patchwarden._hostpaths import is_within

from ._index import IndexReader, IndexSnapshot
from ._render import (
    ExportLinks,
    SummaryCache,
    decision_filters,
    environment,
    list_page,
    neighbours,
    render,
    stylesheet,
    ticket_rows,
    verdict_page,
)

MARKER = ".patchwarden-export"
"""Marks a directory as an export, so a later export may replace it whole."""
_FILE_SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class ExportResult:
    out: Path
    verdicts: int
    pages: int
    warnings: tuple[str, ...]


def _check_destination(log_dir: Path, out: Path) -> None:
    if not log_dir.is_dir():
        raise ConfigError("no such log directory", where=str(log_dir))
    real_out, real_logs = out.resolve(), log_dir.resolve()
    if is_within(real_out, real_logs) or is_within(real_logs, real_out):
        raise ConfigError(
            f"the export must be apart from the log directory {real_logs}", where=str(out)
        )
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ConfigError("exists and is not a directory", where=str(out))
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ConfigError(
            "not empty and not an earlier export; give a new or empty directory", where=str(out)
        )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _filters(snapshot: IndexSnapshot) -> list[tuple[str, int]]:
    """Decisions that get pages of their own: names that are safe as file names."""
    return [(d, n) for d, n in decision_filters(snapshot) if _FILE_SAFE.match(d)]


def _build(log_dir: Path, stage: Path) -> ExportResult:
    env = environment()
    snapshot = IndexReader(log_dir).snapshot()
    summaries = SummaryCache(log_dir)
    filters = _filters(snapshot)
    shown = str(log_dir)
    pages = 0
    top = ExportLinks(0)
    for decision in [None, *(d for d, _ in filters)]:
        listing = list_page(snapshot, summaries, decision, 1)
        for number in range(1, listing.pages + 1):
            listing = list_page(snapshot, summaries, decision, number)
            html = render(
                env,
                "list.html",
                top,
                snapshot.warnings,
                log_dir=shown,
                page=listing,
                filters=filters,
                total=len(snapshot.entries),
            )
            _write(stage / ExportLinks.list_page(decision, number), html)
            pages += 1
    rows, problems = ticket_rows(log_dir)
    _write(
        stage / "tickets.html",
        render(
            env,
            "tickets.html",
            top,
            snapshot.warnings,
            log_dir=shown,
            rows=rows,
            problems=problems,
            known=snapshot.by_id,
        ),
    )
    pages += 1
    deep = ExportLinks(2)
    for entry in snapshot.entries:
        folder = stage / "verdicts" / entry.verdict_id
        view = verdict_page(log_dir, entry)
        html = render(
            env,
            "verdict.html",
            deep,
            (),
            log_dir=shown,
            view=view,
            nav=neighbours(snapshot, entry.verdict_id, None),
            decision=None,
        )
        _write(folder / "index.html", html)
        pages += 1
        for name, source in view.bundle.files.items():
            target = folder / "files" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target, follow_symlinks=False)
    _write(stage / "view.css", stylesheet())
    (stage / MARKER).write_text("written by patchwarden verdicts export\n", encoding="utf-8")
    return ExportResult(stage, len(snapshot.entries), pages, snapshot.warnings)


def export_site(log_dir: Path, out: Path) -> ExportResult:
    """Write the static pages of ``log_dir`` to ``out``; see the module docstring."""
    _check_destination(log_dir, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = out.parent / f".{out.name}.export-{secrets.token_hex(4)}"
    try:
        stage.mkdir()
        result = _build(log_dir, stage)
        if out.exists():
            old = out.parent / f".{out.name}.old-{secrets.token_hex(4)}"
            os.rename(out, old)
            os.rename(stage, out)
            shutil.rmtree(old)
        else:
            os.rename(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return ExportResult(out, result.verdicts, result.pages, result.warnings)


__all__ = ["ExportResult", "export_site"]
