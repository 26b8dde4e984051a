"""What every scorecard check is made of (docs/design/scorecard.md).

A check is one object: its ``name`` (the key in ``scorecard.json``), its phase and
``run(context) -> Check``. A check ``before_runs`` reads only the commits and the planned
trees (:class:`PlanContext`) and is worked out while the runs go; one ``after_runs``
reads what the runs gave as well (:class:`ScoreContext`). The order of the report is the
order of ``SCORECARD`` (scorer/checks/_registry.py).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from pydantic import BaseModel, ConfigDict

from .._config import ScorerConfig

if TYPE_CHECKING:
    from ._context import PlanContext, ScoreContext

Outcome = Literal["pass", "note", "review", "reject"]
"""``note``: worth a line for the reviewer, never a reason to look (docs/design/scorecard.md)."""


class Check(BaseModel):
    """One check's result, as ``scorecard.json`` holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    check: str
    outcome: Outcome
    evidence: list[str] = []


class Change(BaseModel):
    """One path the patch changes (a rename is two changes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: str
    """git's letter: A added, M modified, D deleted, T type changed."""
    path: str


class SourceChange(BaseModel):
    """A changed non-test Python file: its text in the parent and in the patch."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    parent: str | None
    """None when the patch adds the file."""
    patch: str | None
    """None when the patch deletes the file."""


@dataclass(frozen=True)
class Severity:
    """A check whose finding's outcome is the operator's: ``scorer.<setting>`` of the
    operator configuration, a field of ``ScorerConfig`` (its type lists the outcomes an
    operator may choose, its default is the outcome without a configuration)."""

    setting: str

    def __post_init__(self) -> None:
        if self.setting not in ScorerConfig.model_fields:
            raise TypeError(f"no scorer setting {self.setting!r} for a check's severity")

    @property
    def choices(self) -> tuple[str, ...]:
        return get_args(ScorerConfig.model_fields[self.setting].annotation)

    @property
    def default(self) -> object:
        return ScorerConfig.model_fields[self.setting].default


@dataclass(frozen=True)
class BeforeRuns:
    """A check that reads only the commits and the planned trees."""

    name: str
    run: Callable[[PlanContext], Check]
    severity: Severity | None = None
    phase: Literal["before_runs"] = "before_runs"


@dataclass(frozen=True)
class AfterRuns:
    """A check that reads what the runs gave (rows, gates, the reporter's channel)."""

    name: str
    run: Callable[[ScoreContext], Check]
    severity: Severity | None = None
    phase: Literal["after_runs"] = "after_runs"


ScorecardCheck = BeforeRuns | AfterRuns


def found(name: str, hits: list[str], when: Outcome = "reject") -> Check:
    """``when`` if anything was found, else ``pass``; the findings are the evidence."""
    return Check(check=name, outcome=when if hits else "pass", evidence=hits)


def matches(path: str, globs: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in globs)
