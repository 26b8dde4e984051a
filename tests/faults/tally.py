"""What the fault drivers observed, for the line printed at the end of the session:
``N faults injected, N handled, 0 accepts from faults, 0 verdicts lost``.

A fault is *handled* when every check of its test held (the test body raised nothing).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Fault:
    name: str
    handled: bool = False
    accepts: int = 0
    """Verdicts of ``accept`` that the faulted operation produced (must stay 0)."""
    lost: int = 0
    """Verdicts lost or half-written (delivered but not in the log, indexed but incomplete,
    in the log but not indexed)."""
    notes: list[str] = field(default_factory=list)


FAULTS: list[Fault] = []


@contextlib.contextmanager
def injected(name: str) -> Iterator[Fault]:
    """Record one injected fault; it is handled if the block ends without an exception."""
    fault = Fault(name)
    FAULTS.append(fault)
    yield fault
    fault.handled = True


def summary_line() -> str:
    """Exactly ``N faults injected, N handled, N accepts from faults, N verdicts lost``."""
    handled = sum(f.handled for f in FAULTS)
    accepts = sum(f.accepts for f in FAULTS)
    lost = sum(f.lost for f in FAULTS)
    return (
        f"{len(FAULTS)} faults injected, {handled} handled, "
        f"{accepts} accepts from faults, {lost} verdicts lost"
    )


def table_lines(*, everything: bool) -> list[str]:
    rows = FAULTS if everything else [f for f in FAULTS if not f.handled or f.accepts or f.lost]
    lines = []
    for f in rows:
        mark = "handled" if f.handled and not (f.accepts or f.lost) else "FAILED"
        lines.append(f"{mark:<8} {f.name} (accepts {f.accepts}, lost {f.lost})")
        lines += [f"         - {note}" for note in f.notes]
    return lines
