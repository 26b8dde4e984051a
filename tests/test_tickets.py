"""Freeze tickets (docs/design/differential-gate.md): proposed by a verdict, approved by a human
with an expiry
and a reason code, deleted when expired, and bound to their patch commit."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from patchwarden.scorer import (
    InputError,
    Ticket,
    approve_ticket,
    expire_tickets,
    list_tickets,
    ticket_valid_for,
    write_ticket,
)
from patchwarden.scorer.layers._tickets import parse_expiry, read_ticket
from patchwarden.server.cli import cli

PATCH = "a" * 40
OTHER_PATCH = "b" * 40
PARENT = "c" * 40
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _propose(log_dir: Path, verdict_id: str = "20261129T120000Z-aaaaaaaaaa-0001") -> str:
    write_ticket(
        log_dir,
        verdict_id=verdict_id,
        patch_sha=PATCH,
        parent_sha=PARENT,
        contract_hash="sha256:" + "0" * 64,
        properties=["prop.bulk_rounding"],
        now=NOW,
    )
    return verdict_id


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="patchwarden")
    return result.exit_code, result.stdout, result.stderr


def test_a_proposed_ticket_holds_the_verdict_and_is_valid_for_nothing(tmp_path: Path) -> None:
    ticket_id = _propose(tmp_path)
    data = json.loads((tmp_path / "tickets" / f"{ticket_id}.json").read_text())
    assert data == {
        "ticket_id": ticket_id,
        "verdict_id": ticket_id,
        "patch_sha": PATCH,
        "parent_sha": PARENT,
        "contract_hash": "sha256:" + "0" * 64,
        "properties": ["prop.bulk_rounding"],
        "status": "proposed",
        "created_at": "2026-11-29T12:00:00Z",
    }
    assert not ticket_valid_for(read_ticket(tmp_path, ticket_id), PATCH, NOW)


def test_an_approved_ticket_covers_its_own_patch_only_and_only_until_expiry(
    tmp_path: Path,
) -> None:
    ticket_id = _propose(tmp_path)
    expires = parse_expiry("2026-12-31")
    ticket = approve_ticket(
        tmp_path, ticket_id, expires=expires, reason_code="known_flake", approved_by="rev", now=NOW
    )
    assert (ticket.status, ticket.expires, ticket.reason_code) == (
        "approved",
        "2026-12-31T23:59:59Z",
        "known_flake",
    )
    assert ticket_valid_for(ticket, PATCH, NOW)
    assert ticket_valid_for(ticket, PATCH, expires)  # through the last second of the day
    assert not ticket_valid_for(ticket, OTHER_PATCH, NOW)  # presented for another patch
    assert not ticket_valid_for(ticket, PATCH, expires + timedelta(seconds=1))


def test_approval_refuses_past_dates_bad_codes_and_reapproval(tmp_path: Path) -> None:
    ticket_id = _propose(tmp_path)
    with pytest.raises(InputError, match="in the past"):
        approve_ticket(
            tmp_path, ticket_id, expires=NOW - timedelta(days=1), reason_code="known_flake", now=NOW
        )
    with pytest.raises(InputError, match="snake_case"):
        approve_ticket(
            tmp_path,
            ticket_id,
            expires=NOW + timedelta(days=1),
            reason_code="Because I said so",
            now=NOW,
        )
    approve_ticket(
        tmp_path, ticket_id, expires=NOW + timedelta(days=1), reason_code="known_flake", now=NOW
    )
    with pytest.raises(InputError, match="already approved"):
        approve_ticket(
            tmp_path, ticket_id, expires=NOW + timedelta(days=2), reason_code="known_flake", now=NOW
        )


def test_expire_deletes_expired_tickets_only(tmp_path: Path) -> None:
    soon = _propose(tmp_path, "20261129T120000Z-aaaaaaaaaa-0001")
    later = _propose(tmp_path, "20261129T120000Z-aaaaaaaaaa-0002")
    pending = _propose(tmp_path, "20261129T120000Z-aaaaaaaaaa-0003")
    approve_ticket(tmp_path, soon, expires=NOW + timedelta(hours=1), reason_code="a_b", now=NOW)
    approve_ticket(tmp_path, later, expires=NOW + timedelta(days=9), reason_code="a_b", now=NOW)
    deleted = expire_tickets(tmp_path, NOW + timedelta(days=1))
    assert [t.ticket_id for t in deleted] == [soon]
    assert sorted(t.ticket_id for t in list_tickets(tmp_path)) == [later, pending]
    assert not (tmp_path / "tickets" / f"{soon}.json").exists()


def test_cli_approve_list_expire(tmp_path: Path) -> None:
    ticket_id = _propose(tmp_path)
    code, out, _ = _cli("freeze", "list", "--log-dir", str(tmp_path))
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == ["TICKET", "STATUS", "PATCH", "EXPIRES", "REASON", "PROPERTIES"]
    assert row.split() == [ticket_id, "proposed", PATCH[:12], "-", "-", "prop.bulk_rounding"]
    next_year = str(datetime.now(UTC).year + 1)
    code, out, err = _cli(
        "freeze",
        "approve",
        ticket_id,
        "--expires",
        f"{next_year}-01-31",
        "--reason-code",
        "upstream_bug",
        "--log-dir",
        str(tmp_path),
    )
    assert (code, err) == (0, "")
    assert out.startswith(
        f"approved {ticket_id} for patch {PATCH} until {next_year}-01-31T23:59:59Z"
    )
    code, out, _ = _cli("freeze", "list", "--log-dir", str(tmp_path), "--json")
    assert json.loads(out)[0]["status"] == "approved"
    # Nothing has expired yet.
    assert _cli("freeze", "expire", "--log-dir", str(tmp_path))[1] == "no expired tickets\n"
    # A ticket that expired (approved in the past, as the file would be a year on):
    expired = _propose(tmp_path, "20251129T120000Z-aaaaaaaaaa-0009")
    approve_ticket(
        tmp_path,
        expired,
        expires=datetime(2025, 12, 1, tzinfo=UTC),
        reason_code="known_flake",
        now=datetime(2025, 11, 30, tzinfo=UTC),
    )
    code, out, _ = _cli("freeze", "expire", "--log-dir", str(tmp_path))
    assert code == 0
    assert out == f"deleted {expired} (patch {PATCH[:12]}, expired 2025-12-01T00:00:00Z)\n"
    assert [t.ticket_id for t in list_tickets(tmp_path)] == [ticket_id]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--expires", "2020-01-01", "--reason-code", "known_flake"], "--expires is in the past"),
        (["--expires", "soon", "--reason-code", "known_flake"], "--expires must be a date"),
        (["--expires", "2999-01-01", "--reason-code", "No!"], "--reason-code must be"),
        (["--reason-code", "known_flake"], "Missing option '--expires'"),
    ],
)
def test_cli_approve_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    ticket_id = _propose(tmp_path)
    code, out, err = _cli("freeze", "approve", ticket_id, *args, "--log-dir", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.startswith("patchwarden: error: ") and message in err
    assert len(err.splitlines()) == 1


def test_cli_unknown_ticket_and_hostile_ids(tmp_path: Path) -> None:
    for ticket_id, message in (("nope", "no such ticket"), ("../../etc/passwd", "not a ticket id")):
        code, _, err = _cli(
            "freeze",
            "approve",
            ticket_id,
            "--expires",
            "2999-01-01",
            "--reason-code",
            "known_flake",
            "--log-dir",
            str(tmp_path),
        )
        assert code == 2 and message in err and len(err.splitlines()) == 1


stamps = st.sampled_from(["", "2026-11-01T09:00:00Z", "2027-01-31T23:59:59Z"])
shas = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)


@given(
    st.builds(
        Ticket,
        ticket_id=st.from_regex(r"\A[0-9A-Za-z][0-9A-Za-z_-]{0,20}\Z"),
        verdict_id=st.text(max_size=30),
        patch_sha=shas,
        parent_sha=shas,
        contract_hash=st.text(max_size=70),
        properties=st.lists(st.text(max_size=20), max_size=3),
        status=st.sampled_from(["proposed", "approved"]),
        created_at=stamps,
        expires=stamps,
        reason_code=st.sampled_from(["", "known_flake"]),
        approved_by=st.text(max_size=10),
        approved_at=stamps,
    )
)
def test_ticket_round_trips(ticket: Ticket) -> None:
    assert Ticket.model_validate_json(ticket.model_dump_json()) == ticket
