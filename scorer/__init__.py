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
from ._review import review_note
from ._rows import RunRow, dump_rows, parse_rows, read_rows
from ._score import ScoreRequest, Verdict, restore_from_parent, score
from ._scorecard import Check
from ._witness import make_witness, normalise_witness

__all__ = [
    "DEFAULT_CONTRACT_PATH",
    "Check",
    "Contract",
    "ContractError",
    "Decision",
    "FixtureDrift",
    "FixtureEntry",
    "GateResult",
    "InputError",
    "Manifest",
    "PatchwardenError",
    "Property",
    "PropertyResult",
    "Reason",
    "RunRow",
    "ScoreRequest",
    "ScorerConfig",
    "SideCounts",
    "SkipReason",
    "Verdict",
    "combine",
    "compute_fixture_closure_hash",
    "compute_spec_hash",
    "decide",
    "decide_property",
    "dump_rows",
    "guard_fixtures",
    "load_contract",
    "make_witness",
    "normalise_witness",
    "parse_contract",
    "parse_rows",
    "pin_fixtures",
    "read_manifest",
    "read_rows",
    "restore_from_parent",
    "review_note",
    "score",
    "validation_message",
]
