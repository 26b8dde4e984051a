"""The scorecard (``SCORECARD``: one object per check, in the report's order), what the
checks read (``PlanContext``, ``ScoreContext``), their syntax-tree scans (suspicious, spec
review, special cases) and the restore of contract and protected paths from the parent.
"""

from __future__ import annotations

from patchwarden._treepaths import under

from ._base import (
    AfterRuns,
    BeforeRuns,
    Change,
    Check,
    Outcome,
    ScorecardCheck,
    Severity,
    SourceChange,
    matches,
)
from ._check_differential import differential_check
from ._check_fixture_drifted import fixture_drifts, snapshot
from ._check_forged import forgeries
from ._check_spec_review import check_spec_review
from ._check_suspicious import check_suspicious
from ._check_test_tampering import PYPROJECT, check_test_tampering
from ._context import PlanContext, ScoreContext
from ._registry import SCORECARD, check_lines, final_decision, run_before_runs, run_scorecard
from ._restore import remove_bytecode, restore_from_parent, tree_entries
from ._spec_review import BoundaryChange, Nudge, ScopeNudges, boundary_changes, boundary_nudges
from ._special_case import PropertyInputs, SpecialCase, property_inputs_in, special_cases
from ._suspicious import Finding, find_suspicious

__all__ = [
    "PYPROJECT",
    "SCORECARD",
    "AfterRuns",
    "BeforeRuns",
    "BoundaryChange",
    "Change",
    "Check",
    "Finding",
    "Nudge",
    "Outcome",
    "PlanContext",
    "PropertyInputs",
    "ScopeNudges",
    "ScoreContext",
    "ScorecardCheck",
    "Severity",
    "SourceChange",
    "SpecialCase",
    "boundary_changes",
    "boundary_nudges",
    "check_lines",
    "check_spec_review",
    "check_suspicious",
    "check_test_tampering",
    "differential_check",
    "final_decision",
    "find_suspicious",
    "fixture_drifts",
    "forgeries",
    "matches",
    "property_inputs_in",
    "remove_bytecode",
    "restore_from_parent",
    "run_before_runs",
    "run_scorecard",
    "snapshot",
    "special_cases",
    "tree_entries",
    "under",
]
