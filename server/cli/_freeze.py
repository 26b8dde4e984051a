"""``patchwarden freeze propose|check|approve|list|expire``: freeze records and tickets."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from patchwarden.scorer import (
    DEFAULT_CONTRACT_PATH,
    DEFAULT_RECORD,
    Ticket,
    approve_ticket,
    expire_tickets,
    freeze_check,
    list_tickets,
    parse_expiry,
    propose_freeze,
)

from ._base import (
    EXIT_FAILS,
    OneLineGroup,
    config_of,
    config_option,
    contract_option,
    json_option,
    log_dir_of,
    log_dir_option,
    now,
    printable,
    repo_option,
    table,
)
from ._progress import progress


def _ticket_rows(tickets: Sequence[Ticket]) -> list[list[str]]:
    return [
        [
            t.ticket_id,
            t.status,
            t.patch_sha[:12],
            t.expires or "-",
            t.reason_code or "-",
            printable(", ".join(t.properties)) or "-",
        ]
        for t in tickets
    ]


TICKET_HEADERS = ("TICKET", "STATUS", "PATCH", "EXPIRES", "REASON", "PROPERTIES")


@click.group("freeze", cls=OneLineGroup)
def freeze_group() -> None:
    """Freeze records (docs/design/contract-layers.md) and freeze tickets
    (docs/design/contract-layers.md)."""


FREEZE_STEPS = 5
"""The freeze procedure's steps (docs/design/contract-layers.md, "Freeze records")."""


@freeze_group.command("propose")
@repo_option
@click.option(
    "--test-id",
    required=True,
    help="The test to freeze: a pytest node id, or a ctest test name on a ctest contract.",
)
@click.option("--fixture", required=True, help="The fixture, a path in the repository.")
@click.option("--oracle", required=True, help="The property file that checks it.")
@click.option("--contract", help=f"Contract path (default: {DEFAULT_CONTRACT_PATH} if any).")
@click.option("--reason", default="", help="Why the test should be frozen (kept in notes).")
@config_option
def propose_cmd(
    repo: Path,
    test_id: str,
    fixture: str,
    oracle: str,
    contract: str | None,
    reason: str,
    config_path: Path | None,
) -> None:
    """Run the five steps; write .freeze/record.json only when every step holds.
    Exit 0: proposed for review; 1: rejected (the step, the field and why)."""
    config = config_of(config_path)
    with progress("freeze propose", total=FREEZE_STEPS) as bar:

        def say(line: str) -> None:
            click.echo(line)
            words = line.split()
            if words[:1] == ["step"] and words[1:2] and words[1].isdigit():
                bar.report(int(words[1]), FREEZE_STEPS, " ".join(words[:3]))

        proposal = propose_freeze(
            repo,
            test_id,
            fixture,
            oracle,
            config.scorer,
            config.sandbox,
            contract=contract,
            reason=reason,
            say=say,
        )
    if proposal.status == "proposed_for_review":
        click.echo(f"proposed_for_review: {proposal.record}")
        return
    click.echo(f"rejected at step {proposal.step}: {proposal.reason}")
    sys.exit(EXIT_FAILS)


@freeze_group.command("check")
@repo_option
@click.option(
    "--record",
    type=click.Path(path_type=Path, dir_okay=False),
    help=f"The record (default: {DEFAULT_RECORD} in the repository).",
)
@contract_option
@config_option
def check_cmd(repo: Path, record: Path | None, contract: str, config_path: Path | None) -> None:
    """Exit 0 only when all six fields of the record hold (HEAD is the patch, HEAD^ its
    parent); else 1 with one line per field that does not. The test id is one of the
    contract's runner (a pytest node id, or a ctest test name)."""
    config = config_of(config_path)
    problems = freeze_check(
        repo, config.scorer, config.sandbox, record_path=record, contract=contract
    )
    for problem in problems:
        click.echo(printable(problem.line()))
    if problems:
        sys.exit(EXIT_FAILS)
    click.echo("ok: every field of the freeze record holds")


@freeze_group.command("approve")
@click.argument("ticket_id")
@click.option("--expires", required=True, help="YYYY-MM-DD (through that day, UTC).")
@click.option("--reason-code", required=True, help="snake_case, e.g. known_flake.")
@log_dir_option
@config_option
def approve_cmd(
    ticket_id: str,
    expires: str,
    reason_code: str,
    log_dir: Path | None,
    config_path: Path | None,
) -> None:
    """Approve a proposed freeze ticket with an expiry and a reason code. The ticket
    covers its own patch commit only."""
    ticket = approve_ticket(
        log_dir_of(config_path, log_dir),
        ticket_id,
        expires=parse_expiry(expires),
        reason_code=reason_code,
        now=now(),
    )
    click.echo(
        f"approved {ticket.ticket_id} for patch {ticket.patch_sha} until {ticket.expires} "
        f"({ticket.reason_code}, by {ticket.approved_by})"
    )


@freeze_group.command("list")
@log_dir_option
@json_option
@config_option
def list_cmd(log_dir: Path | None, as_json: bool, config_path: Path | None) -> None:
    """Every freeze ticket: proposed or approved, with patch, expiry and reason."""
    tickets = list_tickets(log_dir_of(config_path, log_dir))
    if as_json:
        click.echo(json.dumps([t.model_dump(mode="json") for t in tickets], indent=2))
        return
    if not tickets:
        click.echo("no freeze tickets")
        return
    click.echo(table(TICKET_HEADERS, _ticket_rows(tickets)))


@freeze_group.command("expire")
@log_dir_option
@config_option
def expire_cmd(log_dir: Path | None, config_path: Path | None) -> None:
    """Delete every ticket whose expiry has passed; print what was deleted."""
    deleted = expire_tickets(log_dir_of(config_path, log_dir), now())
    for ticket in deleted:
        click.echo(
            f"deleted {ticket.ticket_id} (patch {ticket.patch_sha[:12]}, expired {ticket.expires})"
        )
    if not deleted:
        click.echo("no expired tickets")
