"""Freeze tickets: a propose_freeze verdict is a review ticket, not a pass
(docs/design/differential-gate.md).

``score`` writes ``<log_dir>/tickets/<id>.json`` (status ``proposed``) for
each propose_freeze verdict; the ticket id is the verdict id. A human
approves it with an expiry date and a reason code; an expired ticket is
deleted by ``freeze expire``. A ticket is bound to its patch commit: for
any other patch it is invalid (:func:`ticket_valid_for`).
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from patchwarden._documents import parse_document, validate_document

from .._errors import InputError
from ._quarantine import utc_stamp, write_json_atomic

TICKETS_DIR = "tickets"
REASON_CODE = re.compile(r"^[a-z][a-z0-9_]{1,47}$")
"""A reason code is a short snake_case word (``known_flake``, ``upstream_bug``...)."""
TICKET_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_-]{0,99}$")
_STAMP = "%Y-%m-%dT%H:%M:%SZ"

TicketStatus = Literal["proposed", "approved"]


class Ticket(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ticket_id: str
    verdict_id: str
    patch_sha: str = Field(pattern=r"^[0-9a-f]{40}$")
    parent_sha: str = Field(pattern=r"^[0-9a-f]{40}$")
    contract_hash: str
    properties: list[str]
    """Properties whose reason was shared_variant_fail."""
    status: TicketStatus
    created_at: str
    expires: str = ""
    """UTC instant after which the ticket is void; set on approval."""
    reason_code: str = ""
    approved_by: str = ""
    approved_at: str = ""

    def expires_at(self) -> datetime | None:
        return _parse_stamp(self.expires) if self.expires else None


def _parse_stamp(text: str) -> datetime:
    return datetime.strptime(text, _STAMP).replace(tzinfo=UTC)


def _tickets_dir(log_dir: Path) -> Path:
    return log_dir / TICKETS_DIR


def ticket_path(log_dir: Path, ticket_id: str) -> Path:
    if not TICKET_ID.match(ticket_id):
        raise InputError(f"not a ticket id: {ticket_id!r}")
    return _tickets_dir(log_dir) / f"{ticket_id}.json"


def write_ticket(
    log_dir: Path,
    *,
    verdict_id: str,
    patch_sha: str,
    parent_sha: str,
    contract_hash: str,
    properties: Sequence[str],
    now: datetime | None = None,
) -> Path:
    """Write the ``proposed`` ticket of a propose_freeze verdict; return its path."""
    ticket = Ticket(
        ticket_id=verdict_id,
        verdict_id=verdict_id,
        patch_sha=patch_sha,
        parent_sha=parent_sha,
        contract_hash=contract_hash,
        properties=list(properties),
        status="proposed",
        created_at=utc_stamp(now),
    )
    path = ticket_path(log_dir, ticket.ticket_id)
    _write(path, ticket)
    return path


def _write(path: Path, ticket: Ticket) -> None:
    data = ticket.model_dump(mode="json")
    write_json_atomic(path, {k: v for k, v in data.items() if v != ""})


def read_ticket(log_dir: Path, ticket_id: str) -> Ticket:
    return _load(ticket_path(log_dir, ticket_id))


def _load(path: Path) -> Ticket:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such ticket", where=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the ticket: {exc}", where=str(path)) from None
    data = parse_document(text, str(path), json_only=True)
    return validate_document(Ticket, data, text, str(path), what="ticket")


def list_tickets(log_dir: Path) -> list[Ticket]:
    directory = _tickets_dir(log_dir)
    if not directory.is_dir():
        return []
    return [
        _load(path) for path in sorted(directory.glob("*.json")) if not path.name.startswith(".")
    ]


def parse_expiry(text: str) -> datetime:
    """``YYYY-MM-DD`` (valid through the end of that day, UTC) or ``YYYY-MM-DDTHH:MM:SSZ``."""
    value = text.strip()
    try:
        if "T" in value:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
        day = date.fromisoformat(value)
    except ValueError:
        raise InputError(
            f"--expires must be a date (YYYY-MM-DD) or a UTC time, got {text!r}"
        ) from None
    return datetime.combine(day, time(23, 59, 59), tzinfo=UTC)


def approve_ticket(
    log_dir: Path,
    ticket_id: str,
    *,
    expires: datetime,
    reason_code: str,
    approved_by: str | None = None,
    now: datetime | None = None,
) -> Ticket:
    """Add the human's expiry and reason code; refuse past dates and unknown shapes."""
    moment = now or datetime.now(UTC)
    if not REASON_CODE.match(reason_code):
        raise InputError(
            f"--reason-code must be a snake_case word such as known_flake, got {reason_code!r}"
        )
    if expires <= moment:
        raise InputError(f"--expires is in the past: {utc_stamp(expires)}")
    path = ticket_path(log_dir, ticket_id)
    ticket = _load(path)
    if ticket.status != "proposed":
        raise InputError(f"ticket is already {ticket.status}", where=str(path))
    approved = ticket.model_copy(
        update={
            "status": "approved",
            "expires": utc_stamp(expires),
            "reason_code": reason_code,
            "approved_by": approved_by or _user(),
            "approved_at": utc_stamp(moment),
        }
    )
    _write(path, approved)
    return approved


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid:{os.getuid()}"


def is_expired(ticket: Ticket, now: datetime) -> bool:
    expires = ticket.expires_at()
    return expires is not None and now > expires


def expire_tickets(log_dir: Path, now: datetime | None = None) -> list[Ticket]:
    """Delete every approved ticket whose expiry has passed; return them."""
    moment = now or datetime.now(UTC)
    deleted = []
    for ticket in list_tickets(log_dir):
        if is_expired(ticket, moment):
            ticket_path(log_dir, ticket.ticket_id).unlink()
            deleted.append(ticket)
    return deleted


def ticket_valid_for(ticket: Ticket, patch_sha: str, now: datetime) -> bool:
    """Whether ``ticket`` covers ``patch_sha`` at ``now``: approved, not expired, and
    issued for exactly this patch commit (never for another patch)."""
    expires = ticket.expires_at()
    return (
        ticket.status == "approved"
        and expires is not None
        and now <= expires
        and ticket.patch_sha == patch_sha
    )
