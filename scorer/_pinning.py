"""Pinned boundaries: does the spec itself fix where a moved boundary is?
(docs/design/spec-review.md, "Pinned boundaries")

A patch that clears a property by moving a boundary (``<=`` to ``<``) may have fixed the
code or moved the spec. When the contract's properties fail on every nudge of the new
boundary (the operator moved to its neighbour, an integer moved by one), the properties
pin it down: the code now agrees with the spec exactly there, and the move is a note.
When a nudge passes, or a boundary disappeared, a human must look (``review``).

Only the contract's properties on its schedule decide: the outcome the agent sees must
not depend on held-out properties or extra seeds. Each nudge is a copy of the restored
patch tree with one file rewritten, run seed by seed as ordinary units of the executor.
See docs/design/spec-review.md, "Pinned boundaries".
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from patchwarden.sandbox import ImportLayout, Limits, PropertyTarget, RunEntropy

from ._contract import Contract
from .checks import Nudge, SourceChange, boundary_nudges
from .executors import RunOutcome, RunUnit, UnitKey

MAX_NUDGES = 12
"""Nudges run per submission; a patch moving more boundaries than this is reviewed as is."""

Submit = Callable[[RunUnit], Future[RunOutcome]]


@dataclass(frozen=True)
class Pinning:
    """What the nudges showed, for the spec_review check and its evidence."""

    pinned: frozenset[tuple[str, str]]
    """(path, scope) whose moved boundary every nudge of failed a property."""
    evidence: tuple[str, ...]


NOTHING_PINNED = Pinning(frozenset(), ())


def cleared_a_property(outcomes: Mapping[UnitKey, RunOutcome]) -> bool:
    """Whether some contract property failed on the parent and passed on every patch seed
    (the gate's ``parent_fail_cleared``, read from the contract's own runs)."""
    statuses: dict[str, dict[str, set[str]]] = {"parent": {}, "patch": {}}
    for (name, _seed), outcome in outcomes.items():
        if name in statuses:
            for record in outcome.run.records:
                statuses[name].setdefault(record.prop, set()).add(record.status)
    return any(
        "fail" in seen and statuses["patch"].get(prop) == {"pass"}
        for prop, seen in statuses["parent"].items()
    )


def pin_boundaries(
    patch_tree: Path,
    contract: Contract,
    sources: Sequence[SourceChange],
    outcomes: Mapping[UnitKey, RunOutcome],
    submit: Submit,
    *,
    label: str,
    contract_paths: Sequence[str],
    limits: Limits,
    layout: ImportLayout | None,
    state: Path,
    entropy: Callable[[int], RunEntropy],
) -> Pinning:
    """Run the nudges of every boundary the patch moved, when it cleared a property.
    ``entropy``: each seed's, as the patch's runs had it (scorer/_seeds.py)."""
    if not cleared_a_property(outcomes):
        return NOTHING_PINNED
    scopes = [
        (source.path, found)
        for source in sources
        for found in boundary_nudges(source.path, source.parent, source.patch)
    ]
    jobs = [(path, n) for path, found in scopes if found.pinnable for n in found.nudges]
    if not jobs or len(jobs) > MAX_NUDGES:
        return NOTHING_PINNED
    targets = tuple(PropertyTarget(prop=p.id, node_id=p.test) for p in contract.properties)
    with contextlib.ExitStack() as stack:
        futures: list[list[Future[RunOutcome]]] = []
        for number, (path, nudge) in enumerate(jobs):
            tree = stack.enter_context(_nudged_tree(patch_tree, path, nudge, state))
            units = [
                RunUnit(
                    label=label,
                    tree_name=f"nudge{number}",
                    seed=seed,
                    tree=tree,
                    targets=targets,
                    contract_paths=tuple(contract_paths),
                    limits=limits,
                    layout=layout,
                    runner=contract.runner,
                    seed_env=contract.seed_env,
                    entropy=entropy(seed),
                )
                for seed in contract.seeds
            ]
            futures.append([submit(unit) for unit in units])
        killed = [any(_fails(f) for f in runs) for runs in futures]
    survived = {(path, n.scope) for (path, n), k in zip(jobs, killed, strict=True) if not k}
    pinned = frozenset(
        (path, found.scope)
        for path, found in scopes
        if found.pinnable and (path, found.scope) not in survived
    )
    evidence = tuple(
        f"{path}:{n.line}: {n.scope}: nudge `{n.before}` to `{n.after}`: "
        + ("a property fails" if k else "every property still passes")
        for (path, n), k in zip(jobs, killed, strict=True)
    )
    return Pinning(pinned, evidence)


def _fails(future: Future[RunOutcome]) -> bool:
    """A complete run with a failing row; an incomplete one shows nothing about the spec."""
    if future.exception() is not None:
        return False
    run = future.result().run
    return run.complete and any(r.status == "fail" for r in run.records)


@contextlib.contextmanager
def _nudged_tree(patch_tree: Path, path: str, nudge: Nudge, state: Path) -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(prefix="nudge-", dir=state))
    try:
        work.chmod(0o755)
        tree = work / "tree"
        shutil.copytree(patch_tree, tree, symlinks=True)
        (tree / path).write_text(nudge.source, encoding="utf-8")
        yield tree
    finally:
        shutil.rmtree(work, ignore_errors=True)
