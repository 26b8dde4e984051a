"""What the scorecard checks read, built once per verdict by scorer/_score.py.

:class:`PlanContext` holds what is settled before the first run (the commits' changes, the
planned trees, the contract, the operator configuration); :class:`ScoreContext` adds what
the runs gave (their records and channels, the gates). Both are frozen: a check reads its
context and returns a ``Check``, it never changes what another check sees.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchwarden.sandbox import PropertyRun

    from .._config import ScorerConfig
    from .._contract import Contract
    from ..executors import RunOutcome, UnitKey
    from ..gate import GateResult
    from ._base import Change, SourceChange
    from ._special_case import PropertyInputs


@dataclass(frozen=True)
class PlanContext:
    """The commits and the planned trees, as the runs will see them."""

    config: ScorerConfig
    contract: Contract
    """The contract as read from the parent (without the values a resolution fills in)."""
    trees: Mapping[str, Path]
    """``parent`` and ``patch``, the patch's guarded paths restored from the parent."""
    changes: Sequence[Change]
    """Every path the patch changes (``git diff --name-status --no-renames``)."""
    contract_paths: Sequence[str]
    sources: Sequence[SourceChange]
    """The patch's changed non-test Python files, with both texts."""
    inputs: PropertyInputs
    """The contract's property inputs (never held-out ones: the outcome the agent sees must
    not depend on them)."""
    quarantined: Sequence[str] | None
    """The tests the agent's loop left out; None: the quarantine list's."""
    drifts: Sequence[str]
    """The fixture guard's findings before the runs."""
    snapshots: Mapping[str, Mapping[str, tuple[int, int]]]
    """(size, mtime) of every file of each tree before the runs."""
    tests: Sequence[SourceChange] = ()
    """The patch's changed protected Python files (test modules, conftests), with both
    texts from the commits (the trees hold the parent's)."""


@dataclass(frozen=True)
class ScoreContext:
    """The plan's context and what the runs gave."""

    plan: PlanContext
    outcomes: Mapping[UnitKey, RunOutcome]
    """Every unit's run and what its executor saw of the tree, by (run name, seed)."""
    gate: GateResult
    """The contract group's gate (what the agent sees)."""
    hidden: Mapping[str, GateResult]
    """The gates of the groups the agent never sees (extra_seeds, held_out), by group."""
    pinned: Collection[tuple[str, str]] = ()
    """(path, scope) whose moved boundary every nudge of failed a property
    (scorer/_pinning.py)."""
    nudges: Sequence[str] = ()
    """What each nudge did."""

    @property
    def runs(self) -> dict[tuple[str, int], PropertyRun]:
        return {key: outcome.run for key, outcome in self.outcomes.items()}
