"""Pages of the reviewer's view: one Jinja2 environment, two ways of linking.

The same templates serve the live app (``patchwarden view``: absolute URLs with query
parameters) and the static export (``verdicts export --html``: relative file names), so
the two always show the same pages. Autoescape is on for every template and undefined
names are errors: text from bundles (property ids, witnesses, evidence, output) is data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import jinja2
from pygments.formatters import HtmlFormatter

from patchwarden import PatchwardenError
from patchwarden.scorer import (
    Ticket,
    decided_by,
    list_tickets,
    read_ticket,
    review_findings,
)

from ._bundle import BundleView, read_bundle, read_summary, read_text
from ._diff import MAX_DIFF_BYTES, Diff, render_diff
from ._index import IndexEntry, IndexSnapshot, bundle_dir

PAGE_SIZE = 50
"""Verdicts per list page: one screen of decisions for a reviewer, and a bound on the
bundle reads a list request makes."""
DECISIONS = ("accept", "reject", "propose_freeze", "skipped")
HERE = Path(__file__).parent
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
"""No script at all, styles only from our own stylesheet: a witness or an output line that
looks like HTML can do nothing even if it escaped escaping."""


class Links(Protocol):
    """Where a page links to; the live app and the export each implement it."""

    def home(self, decision: str | None = None, page: int = 1) -> str: ...
    def verdict(self, verdict_id: str, decision: str | None = None) -> str: ...
    def file(self, verdict_id: str, name: str) -> str: ...
    def tickets(self) -> str: ...
    def stylesheet(self) -> str: ...


class LiveLinks:
    """Absolute URLs of the running app."""

    def home(self, decision: str | None = None, page: int = 1) -> str:
        query = {k: v for k, v in (("decision", decision), ("page", page)) if v and v != 1}
        return "/" + (f"?{urlencode(query)}" if query else "")

    def verdict(self, verdict_id: str, decision: str | None = None) -> str:
        suffix = f"?{urlencode({'decision': decision})}" if decision else ""
        return f"/verdicts/{quote(verdict_id, safe='')}{suffix}"

    def file(self, verdict_id: str, name: str) -> str:
        return f"/verdicts/{quote(verdict_id, safe='')}/files/{quote(name)}"

    def tickets(self) -> str:
        return "/tickets"

    def stylesheet(self) -> str:
        return "/static/view.css"


class ExportLinks:
    """Relative file names of the static export, from a page ``depth`` folders down."""

    def __init__(self, depth: int) -> None:
        self.root = "../" * depth

    @staticmethod
    def list_page(decision: str | None, page: int) -> str:
        if decision is None and page == 1:
            return "index.html"
        return f"list-{decision or 'all'}-{page}.html"

    def home(self, decision: str | None = None, page: int = 1) -> str:
        return self.root + quote(self.list_page(decision, page))

    def verdict(self, verdict_id: str, decision: str | None = None) -> str:
        return f"{self.root}verdicts/{quote(verdict_id, safe='')}/index.html"

    def file(self, verdict_id: str, name: str) -> str:
        return f"{self.root}verdicts/{quote(verdict_id, safe='')}/files/{quote(name)}"

    def tickets(self) -> str:
        return self.root + "tickets.html"

    def stylesheet(self) -> str:
        return self.root + "view.css"


def stylesheet() -> str:
    """Our stylesheet and Pygments' token colours, scoped to ``.code``."""
    own = (HERE / "static" / "view.css").read_text(encoding="utf-8")
    tokens = str(HtmlFormatter().get_style_defs(".code"))
    return own + "\n/* Pygments (default style) */\n" + tokens


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["CSP"] = CSP
    env.globals["review_findings"] = review_findings
    env.filters["short"] = lambda sha, n=12: (sha or "-")[:n]
    return env


@dataclass(frozen=True)
class ListRow:
    entry: IndexEntry
    summary: dict[str, Any] | None
    """The bundle's decision.json (counts, scorecard); None when unreadable."""

    def counts(self, side: str) -> dict[str, Any]:
        counts = (self.summary or {}).get("counts")
        value = counts.get(side) if isinstance(counts, dict) else None
        return value if isinstance(value, dict) else {}

    def review_findings(self) -> list[str]:
        """The checks at ``review`` (scorer/_index.py): an accept with one is ``accept*``."""
        return review_findings(self.summary or {})

    def findings(self) -> list[tuple[str, str]]:
        """Checks that did not pass (the differential is the reasons column already)."""
        card = (self.summary or {}).get("scorecard")
        if not isinstance(card, list):
            return []
        return [
            (str(c.get("check", "?")), str(c.get("outcome", "?")))
            for c in card
            if isinstance(c, dict)
            and c.get("outcome") != "pass"
            and c.get("check") != "differential"
        ]


class SummaryCache:
    """decision.json per verdict, read once: a published bundle never changes."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._cache: dict[str, dict[str, Any] | None] = {}

    def get(self, verdict_id: str) -> dict[str, Any] | None:
        if verdict_id not in self._cache:
            summary = read_summary(bundle_dir(self.log_dir, verdict_id))
            if summary is None:
                return None  # not cached: a bundle may still be on its way
            self._cache[verdict_id] = summary
        return self._cache[verdict_id]


@dataclass(frozen=True)
class ListPage:
    decision: str | None
    page: int
    pages: int
    total: int
    rows: tuple[ListRow, ...]


def list_page(
    snapshot: IndexSnapshot, summaries: SummaryCache, decision: str | None, page: int
) -> ListPage:
    entries = snapshot.filtered(decision)
    pages = max(1, math.ceil(len(entries) / PAGE_SIZE))
    page = min(max(page, 1), pages)
    shown = entries[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    return ListPage(
        decision=decision,
        page=page,
        pages=pages,
        total=len(entries),
        rows=tuple(ListRow(entry, summaries.get(entry.verdict_id)) for entry in shown),
    )


def decision_filters(snapshot: IndexSnapshot) -> list[tuple[str, int]]:
    """Known decisions first (even at 0, so the links never move), then any others."""
    known = [(d, snapshot.decisions.get(d, 0)) for d in DECISIONS]
    return known + sorted((d, n) for d, n in snapshot.decisions.items() if d not in DECISIONS)


@dataclass(frozen=True)
class Neighbours:
    newer: IndexEntry | None
    older: IndexEntry | None
    position: int
    total: int
    page: int


def neighbours(snapshot: IndexSnapshot, verdict_id: str, decision: str | None) -> Neighbours:
    entries = snapshot.filtered(decision)
    ids = [e.verdict_id for e in entries]
    if verdict_id not in ids:
        entries, ids = snapshot.entries, [e.verdict_id for e in snapshot.entries]
    at = ids.index(verdict_id)
    return Neighbours(
        newer=entries[at - 1] if at > 0 else None,
        older=entries[at + 1] if at + 1 < len(entries) else None,
        position=at + 1,
        total=len(entries),
        page=at // PAGE_SIZE + 1,
    )


@dataclass(frozen=True)
class VerdictPage:
    entry: IndexEntry
    bundle: BundleView
    diff: Diff | None
    diff_problem: str
    ticket: Ticket | None
    ticket_problem: str

    @property
    def decided_by(self) -> list[str]:
        """What decided the verdict: decision.json's ``decided_by`` (scorer/_index.py), the
        index line's when decision.json cannot be read."""
        if self.bundle.decision:
            return decided_by(self.bundle.decision)
        return list(self.entry.decided_by)


def verdict_page(log_dir: Path, entry: IndexEntry) -> VerdictPage:
    bundle = read_bundle(entry.verdict_id, bundle_dir(log_dir, entry.verdict_id))
    diff: Diff | None = None
    diff_problem = ""
    diff_file = bundle.files.get("patch.diff")
    if diff_file is not None:
        try:
            diff = render_diff(read_text(diff_file, limit=MAX_DIFF_BYTES * 64))
        except (OSError, ValueError) as exc:
            diff_problem = f"{diff_file}: cannot read: {exc}"
    ticket: Ticket | None = None
    ticket_problem = ""
    ticket_id = bundle.decision.get("ticket")
    if isinstance(ticket_id, str):
        try:
            ticket = read_ticket(log_dir, ticket_id)
        except PatchwardenError as exc:  # names the file; a deleted ticket had expired
            ticket_problem = str(exc)
    return VerdictPage(entry, bundle, diff, diff_problem, ticket, ticket_problem)


@dataclass(frozen=True)
class TicketRow:
    ticket: Ticket
    state: str
    """proposed, approved, or expired (approved, past its expiry, not yet deleted)."""


def ticket_rows(log_dir: Path, now: datetime | None = None) -> tuple[list[TicketRow], list[str]]:
    """Every ticket; one unreadable file is a problem line, not an empty page."""
    moment = now or datetime.now(UTC)
    problems: list[str] = []
    try:
        tickets = list_tickets(log_dir)
    except PatchwardenError:
        tickets = []
        for path in sorted((log_dir / "tickets").glob("*.json")):
            if path.name.startswith("."):
                continue
            try:
                tickets.append(read_ticket(log_dir, path.stem))
            except PatchwardenError as exc:  # names the file
                problems.append(str(exc))
    rows = []
    for ticket in tickets:
        expires = ticket.expires_at()
        state: str = ticket.status
        if expires is not None and moment > expires:
            state = "expired"
        rows.append(TicketRow(ticket, state))
    order = {"proposed": 0, "approved": 1, "expired": 2}
    rows.sort(key=lambda r: (order.get(r.state, 3), r.ticket.expires, r.ticket.ticket_id))
    return rows, problems


def render(
    env: jinja2.Environment, template: str, links: Links, warnings: Sequence[str], **context: Any
) -> str:
    return env.get_template(template).render(links=links, warnings=list(warnings), **context)
