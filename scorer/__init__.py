"""The trusted side: contract, rows, witnesses, the differential gate, scoring."""

from __future__ import annotations

from ._config import ScorerConfig
from ._contract import (
    DEFAULT_CONTRACT_PATH,
    Contract,
    Property,
    compute_fixture_closure_hash,
    compute_spec_hash,
    load_contract,
    parse_contract,
    validation_message,
)
from ._errors import ContractError, InputError, PatchwardenError
from ._fixtures import (
    FixtureDrift,
    FixtureEntry,
    Manifest,
    guard_fixtures,
    pin_fixtures,
    read_manifest,
)
from ._freeze import FieldReject, FreezeRecord, check_freeze_record, freeze_check
from ._freeze_propose import FreezeProposal, propose_freeze, propose_freeze_record
from ._gate import (
    Decision,
    GateResult,
    PropertyResult,
    Reason,
    SideCounts,
    SkipReason,
    combine,
    decide,
    decide_property,
)
from ._quarantine import (
    DEFAULT_QUARANTINE_LIST,
    RELEASE_RUNS,
    QuarantineList,
    quarantine_list_path,
    read_quarantine_list,
    release_check,
)
from ._review import review_note
from ._rows import RunRow, dump_rows, parse_rows, read_rows
from ._score import ScoreRequest, Verdict, restore_from_parent, score
from ._scorecard import Check
from ._spec_review import BoundaryChange, boundary_changes
from ._suspicious import Finding, find_suspicious
from ._sweep import SweepResult, base_is_broken, sweep
from ._tickets import (
    Ticket,
    approve_ticket,
    expire_tickets,
    list_tickets,
    ticket_valid_for,
    write_ticket,
)
from ._verdicts import VerdictBundle, load_verdict, read_index
from ._witness import make_witness, normalise_witness

__all__ = [
    "DEFAULT_CONTRACT_PATH",
    "DEFAULT_QUARANTINE_LIST",
    "RELEASE_RUNS",
    "BoundaryChange",
    "Check",
    "Contract",
    "ContractError",
    "Decision",
    "FieldReject",
    "Finding",
    "FixtureDrift",
    "FixtureEntry",
    "FreezeProposal",
    "FreezeRecord",
    "GateResult",
    "InputError",
    "Manifest",
    "PatchwardenError",
    "Property",
    "PropertyResult",
    "QuarantineList",
    "Reason",
    "RunRow",
    "ScoreRequest",
    "ScorerConfig",
    "SideCounts",
    "SkipReason",
    "SweepResult",
    "Ticket",
    "Verdict",
    "VerdictBundle",
    "approve_ticket",
    "base_is_broken",
    "boundary_changes",
    "check_freeze_record",
    "combine",
    "compute_fixture_closure_hash",
    "compute_spec_hash",
    "decide",
    "decide_property",
    "dump_rows",
    "expire_tickets",
    "find_suspicious",
    "freeze_check",
    "guard_fixtures",
    "list_tickets",
    "load_contract",
    "load_verdict",
    "make_witness",
    "normalise_witness",
    "parse_contract",
    "parse_rows",
    "pin_fixtures",
    "propose_freeze",
    "propose_freeze_record",
    "quarantine_list_path",
    "read_index",
    "read_manifest",
    "read_quarantine_list",
    "read_rows",
    "release_check",
    "restore_from_parent",
    "review_note",
    "score",
    "sweep",
    "ticket_valid_for",
    "validation_message",
    "write_ticket",
]
