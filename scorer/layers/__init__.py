"""The contract layers around the gate: flake sweep and quarantine, freeze records and
their five-step procedure, review tickets, and the collector that resolves node ids.
"""

from __future__ import annotations

from ._freeze import DEFAULT_RECORD, FieldReject, FreezeRecord, check_freeze_record, freeze_check
from ._freeze_propose import FreezeProposal, propose_freeze, propose_freeze_record
from ._quarantine import (
    RELEASE_RUNS,
    QuarantineList,
    quarantine_list_path,
    read_quarantine_at,
    read_quarantine_list,
    release_check,
    write_json_atomic,
)
from ._sweep import DEFAULT_SWEEP_RUNS, SweepResult, base_is_broken, sweep
from ._tickets import (
    Ticket,
    approve_ticket,
    expire_tickets,
    list_tickets,
    parse_expiry,
    read_ticket,
    ticket_path,
    ticket_valid_for,
    write_ticket,
)

__all__ = [
    "DEFAULT_RECORD",
    "DEFAULT_SWEEP_RUNS",
    "RELEASE_RUNS",
    "FieldReject",
    "FreezeProposal",
    "FreezeRecord",
    "QuarantineList",
    "SweepResult",
    "Ticket",
    "approve_ticket",
    "base_is_broken",
    "check_freeze_record",
    "expire_tickets",
    "freeze_check",
    "list_tickets",
    "parse_expiry",
    "propose_freeze",
    "propose_freeze_record",
    "quarantine_list_path",
    "read_quarantine_at",
    "read_quarantine_list",
    "read_ticket",
    "release_check",
    "sweep",
    "ticket_path",
    "ticket_valid_for",
    "write_json_atomic",
    "write_ticket",
]
