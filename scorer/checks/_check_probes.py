"""``probes``: what the patch's code does to probe its environment that the parent's did not.

The product process records every probe product code makes (docs/design/isolated-oracle.md,
"Probes"): reads of ``/proc``, ``/sys``, ``/dev``, the tree's ``.git`` or another directory
that is not the interpreter's, sockets, processes, frame and ``gc`` reads, the clocks, the
process's identity (pid, uid, ``stat``), the environment, the modules that only probe.
A patch that behaves differently when it is scored must first find out that it is: the probe
is seen when it is made, whatever its spelling. A probe (its kind and target) that the patch's
runs made and no run of the parent made is a finding naming it and the ``file:line`` that made
it; the outcome is the operator's (``scorer.probes``: ``review`` by default, ``reject`` in
configs/strict.yaml). Runs in-process (a fallback, or ``sandbox.oracle: in-process``) record
no probes: the ``isolation`` check names those.
"""

from __future__ import annotations

from collections.abc import Mapping

from patchwarden.sandbox import PropertyRun

from .._groups import split_run_name
from ._base import AfterRuns, Check, Severity, found
from ._context import ScoreContext


def probe_key(line: str) -> str:
    """A probe's kind and target (``KIND TARGET from FILE:LINE (FUNCTION)`` without where)."""
    return line.rpartition(" from ")[0] or line


def new_probes(runs: Mapping[tuple[str, int], PropertyRun]) -> list[str]:
    """One line per probe the patch's runs made that no parent run made (by kind and
    target): the probe, where the patch's code made it, and the first run that saw it."""
    before = {
        probe_key(line)
        for (name, _), run in runs.items()
        if split_run_name(name)[1] == "parent"
        for line in run.probes
    }
    seen: dict[str, str] = {}
    for (name, seed), run in sorted(runs.items()):
        if split_run_name(name)[1] != "patch":
            continue
        for line in run.probes:
            if probe_key(line) not in before and line not in seen:
                seen[line] = f"{line} ({name} seed {seed})"
    return list(seen.values())


def _run(context: ScoreContext) -> Check:
    return found("probes", new_probes(context.runs), when=context.plan.config.probes)


PROBES = AfterRuns("probes", _run, severity=Severity("probes"))
