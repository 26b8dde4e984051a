"""A clock step across a freeze ticket's expiry (forward, then back).

Mock for the clock only: the CLI reads the time through ``patchwarden.server.cli._freeze.now``
and the library takes it as an argument; a test cannot step the machine's clock, and every
other part (the ticket files, the commands) is real.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchwarden.scorer import InputError, approve_ticket, ticket_valid_for, write_ticket
from patchwarden.scorer.layers._tickets import read_ticket
from patchwarden.server.cli import cli

from . import tally

PATCH, PARENT = "b" * 40, "a" * 40
EXPIRES = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


def test_a_clock_step_across_a_tickets_expiry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tally.injected("clock step across a ticket's expiry") as fault:
        write_ticket(
            tmp_path,
            verdict_id="v-clock",
            patch_sha=PATCH,
            parent_sha=PARENT,
            contract_hash="sha256:c",
            properties=["prop.a"],
            now=EXPIRES - timedelta(days=2),
        )
        approve_ticket(
            tmp_path,
            "v-clock",
            expires=EXPIRES,
            reason_code="known_flake",
            approved_by="reviewer",
            now=EXPIRES - timedelta(days=1),
        )
        ticket = read_ticket(tmp_path, "v-clock")
        before, after = EXPIRES - timedelta(seconds=1), EXPIRES + timedelta(seconds=1)
        assert ticket_valid_for(ticket, PATCH, before)
        assert not ticket_valid_for(ticket, PATCH, after)  # the clock jumps past expiry
        assert not ticket_valid_for(ticket, "c" * 40, before)  # never for another patch

        clock = [before]
        monkeypatch.setattr("patchwarden.server.cli._freeze.now", lambda: clock[0])
        runner = CliRunner()
        args = ["freeze", "expire", "--log-dir", str(tmp_path)]
        kept = runner.invoke(cli, args)
        assert (kept.exit_code, kept.output) == (0, "no expired tickets\n")
        clock[0] = after  # step forward across the expiry
        gone = runner.invoke(cli, args)
        assert gone.exit_code == 0
        assert gone.output.startswith("deleted v-clock (patch bbbbbbbbbbbb, expired 2026-06-01")
        clock[0] = before  # and back: a deleted ticket does not come back
        with pytest.raises(InputError, match="no such ticket"):
            read_ticket(tmp_path, "v-clock")
        listed = runner.invoke(cli, ["freeze", "list", "--log-dir", str(tmp_path)])
        assert (listed.exit_code, listed.output) == (0, "no freeze tickets\n")
        # Re-approving after the step is refused: the ticket is gone, and a date in the
        # past (by the stepped clock) would be refused anyway.
        with pytest.raises(InputError, match="in the past"):
            approve_ticket(
                tmp_path, "v-clock", expires=before, reason_code="known_flake", now=after
            )
        fault.accepts = 0  # a ticket is never an accept; it covered nothing after expiry
