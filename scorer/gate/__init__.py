"""The differential gate, pure: rows, witness classes, the per-property rule table, the
review note. No git, no subprocess, no sandbox (tests/test_architecture.py holds it);
see docs/design/differential-gate.md.
"""

from __future__ import annotations

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
from ._review import SEVERITY, deciding_first, one_line, review_note
from ._rows import RunRow, dump_rows, parse_rows, read_rows
from ._witness import make_witness, normalise_witness

__all__ = [
    "SEVERITY",
    "Decision",
    "GateResult",
    "PropertyResult",
    "Reason",
    "RunRow",
    "SideCounts",
    "SkipReason",
    "combine",
    "decide",
    "decide_property",
    "deciding_first",
    "dump_rows",
    "make_witness",
    "normalise_witness",
    "one_line",
    "parse_rows",
    "read_rows",
    "review_note",
]
