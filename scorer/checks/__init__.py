"""The scorecard checks and what they read: the syntax-tree scans (suspicious, spec
review) and the restore of contract and protected paths from the parent.
"""

from __future__ import annotations

from ._restore import remove_bytecode, restore_from_parent, tree_entries
from ._scorecard import (
    PYPROJECT,
    Change,
    Check,
    SourceChange,
    check_contract_tampered,
    check_differential,
    check_fixture_drifted,
    check_forged,
    check_lines,
    check_oracle_pin,
    check_quarantine,
    check_shadowing,
    check_spec_review,
    check_suspicious,
    check_test_tampering,
    final_decision,
    matches,
    under,
)
from ._spec_review import BoundaryChange, Nudge, ScopeNudges, boundary_changes, boundary_nudges
from ._special_case import PropertyInputs, SpecialCase, property_inputs_in, special_cases
from ._suspicious import Finding, find_suspicious

__all__ = [
    "PYPROJECT",
    "BoundaryChange",
    "Change",
    "Check",
    "Finding",
    "Nudge",
    "PropertyInputs",
    "ScopeNudges",
    "SourceChange",
    "SpecialCase",
    "boundary_changes",
    "boundary_nudges",
    "check_contract_tampered",
    "check_differential",
    "check_fixture_drifted",
    "check_forged",
    "check_lines",
    "check_oracle_pin",
    "check_quarantine",
    "check_shadowing",
    "check_spec_review",
    "check_suspicious",
    "check_test_tampering",
    "final_decision",
    "find_suspicious",
    "matches",
    "property_inputs_in",
    "remove_bytecode",
    "restore_from_parent",
    "special_cases",
    "tree_entries",
    "under",
]
