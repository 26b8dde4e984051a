"""What the attack drivers observed, for the summary printed at the end of the session.

An attack is *stopped* when its observed outcome meets its expectation (decision, reason codes,
scorecard findings, host probes, or the tool's refusal); otherwise it went *through*. Honest
control cases are recorded too but are not attacks.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    driver: str
    """`score` (the CLI) or `mcp` (a served session)."""
    name: str
    honest: bool
    expected: str
    observed: str
    problems: tuple[str, ...]
    duration_s: float

    @property
    def stopped(self) -> bool:
        return not self.problems


ENTRIES: list[Entry] = []


def record(
    driver: str,
    name: str,
    *,
    honest: bool,
    expected: str,
    observed: str,
    problems: list[str],
    duration_s: float,
) -> None:
    ENTRIES.append(Entry(driver, name, honest, expected, observed, tuple(problems), duration_s))


def attacks() -> list[Entry]:
    return [e for e in ENTRIES if not e.honest]


def summary_line() -> str:
    """Exactly `N attacks, N stopped, N through`."""
    done = attacks()
    stopped = sum(e.stopped for e in done)
    return f"{len(done)} attacks, {stopped} stopped, {len(done) - stopped} through"


def table_lines(*, everything: bool) -> list[str]:
    rows = ENTRIES if everything else [e for e in ENTRIES if not e.stopped]
    lines = []
    for e in rows:
        mark = "control" if e.honest else ("stopped" if e.stopped else "THROUGH")
        lines.append(f"{mark:<8} {e.driver}:{e.name} ({e.duration_s:.1f}s)")
        lines.append(f"         expected: {e.expected}")
        lines.append(f"         observed: {e.observed}")
        for problem in e.problems:
            lines.append(f"         - {problem}")
    return lines
