"""``forged``: runs whose result channel cannot be believed (docs/design/runner.md).

A line the run's secret does not authenticate, a sequence out of order, a missing end
marker, an exit status other than the run's own, a canary that did not come back exactly,
an introspection primitive the runner refused; and frame introspection the runner
observed in code the patch changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from patchwarden.sandbox import PropertyRun

from .._groups import split_run_name
from ._base import AfterRuns, Check, SourceChange, found
from ._context import ScoreContext


def forgeries(
    runs: Mapping[tuple[str, int], PropertyRun], sources: Sequence[SourceChange] = ()
) -> list[str]:
    """Every reason a run's channel cannot be believed, and the introspection the runner
    observed in code the patch changed (``sources``: the patch's added or modified non-test
    Python files, with both texts).

    The project's own code may read frames or rename code objects (jinja2 does; a copy of
    ``collections.namedtuple`` reads its caller's globals). An observation in a changed file
    counts unless the parent's runs made the same one (event, file, function) at a line of
    the same text: the patch changed the file, not that line. A read the patch adds, moves
    into other code or rewrites counts. (Reusing a frame an unchanged line returns needs
    frame attributes in the patch's own code, which `suspicious` reports.)"""
    lines = [
        f"{name} seed {seed}: {line}"
        for (name, seed), run in sorted(runs.items())
        for line in run.forged
    ]
    texts = {s.path: (s.parent, s.patch) for s in sources if s.patch is not None}
    before = {
        seen
        for (name, _), run in runs.items()
        if split_run_name(name)[1] == "parent"
        for line in run.observed
        if (seen := observation(line, texts, side=0)) is not None
    }
    lines += [
        f"{name} seed {seed}: {line}, in code the patch changed"
        for (name, seed), run in sorted(runs.items())
        if split_run_name(name)[1] == "patch"
        for line in run.observed
        if (seen := observation(line, texts, side=1)) is not None
        and (not seen[3] or seen not in before)  # a line we cannot read is never excused
    ]
    return lines


def observation(
    line: str, texts: Mapping[str, tuple[str | None, str | None]], side: int
) -> tuple[str, str, str, str] | None:
    """(event, file, function, text of the line) of an observation (``EVENT from
    PATH:LINE (FUNCTION)``) made in one of the changed files ``texts`` (path -> parent and
    patch text; ``side`` picks the tree the run read), or None when it is elsewhere."""
    event, _, where = line.rpartition(" from ")
    place, _, function = where.rpartition(" (")
    path, _, number = place.rpartition(":")
    if not number.isdigit():
        path, number = place, "0"
    matches = [r for r in texts if path == r or path.endswith("/" + r)]
    rel = max(matches, key=len, default=None)  # pkg/a.py, not a.py, for /workspace/pkg/a.py
    if rel is None:
        return None
    text = texts[rel][side] or ""
    lines = text.splitlines()
    at = int(number)
    code = lines[at - 1].strip() if 0 < at <= len(lines) else ""
    return (event, rel, function.removesuffix(")"), code)


def _run(context: ScoreContext) -> Check:
    return found("forged", forgeries(context.runs, context.plan.sources))


FORGED = AfterRuns("forged", _run)
