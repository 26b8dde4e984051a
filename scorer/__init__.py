"""The trusted side: contract, rows, witnesses, the differential gate, scoring."""

from __future__ import annotations

from ._checkout import read_contract_at, read_only_paths_at, working_tree
from ._config import ScorerConfig
from ._contract import (
    DEFAULT_CONTRACT_PATH,
    DEFAULT_QUARANTINE_LIST,
    Contract,
    Property,
    compute_fixture_closure_hash,
    compute_spec_hash,
    load_contract,
    parse_contract,
    validation_message,
)
from ._errors import ConfigError, ContractError, GitError, InputError, PatchwardenError
from ._fixtures import (
    FixtureDrift,
    FixtureEntry,
    Manifest,
    guard_fixtures,
    pin_fixtures,
    read_manifest,
)
from ._freeze import DEFAULT_RECORD, FieldReject, FreezeRecord, check_freeze_record, freeze_check
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
from ._process import serve_scorer, verdict_summary
from ._quarantine import (
    RELEASE_RUNS,
    QuarantineList,
    quarantine_list_path,
    read_quarantine_at,
    read_quarantine_list,
    release_check,
    write_json_atomic,
)
from ._review import review_note
from ._rows import RunRow, dump_rows, parse_rows, read_rows
from ._score import ScoreRequest, Verdict, restore_from_parent, score
from ._scorecard import Check
from ._spec_review import BoundaryChange, boundary_changes
from ._suspicious import Finding, find_suspicious
from ._sweep import DEFAULT_SWEEP_RUNS, SweepResult, base_is_broken, sweep
from ._tickets import (
    Ticket,
    approve_ticket,
    expire_tickets,
    list_tickets,
    parse_expiry,
    ticket_valid_for,
    write_ticket,
)
from ._verdicts import VerdictBundle, load_verdict, read_index
from ._witness import make_witness, normalise_witness

__all__ = [
    "DEFAULT_CONTRACT_PATH",
    "DEFAULT_QUARANTINE_LIST",
    "DEFAULT_RECORD",
    "DEFAULT_SWEEP_RUNS",
    "RELEASE_RUNS",
    "BoundaryChange",
    "Check",
    "ConfigError",
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
    "GitError",
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
    "parse_expiry",
    "parse_rows",
    "pin_fixtures",
    "propose_freeze",
    "propose_freeze_record",
    "quarantine_list_path",
    "read_contract_at",
    "read_index",
    "read_manifest",
    "read_only_paths_at",
    "read_quarantine_at",
    "read_quarantine_list",
    "read_rows",
    "release_check",
    "restore_from_parent",
    "review_note",
    "score",
    "serve_scorer",
    "sweep",
    "ticket_valid_for",
    "validation_message",
    "verdict_summary",
    "working_tree",
    "write_json_atomic",
    "write_ticket",
]
